/**
 * The one error the spreadsheet reader throws for a bad upload. `invalid` is a file that is not what
 * its name says, or is malformed, or is a zip bomb (HTTP 400); `too_large` is an honest file over a
 * limit: bytes, data rows, or decompressed size (HTTP 413).
 */
export class SpreadsheetError extends Error {
  constructor(
    readonly kind: 'invalid' | 'too_large',
    message: string,
  ) {
    super(message);
    this.name = 'SpreadsheetError';
  }
}

export const invalid = (message: string): SpreadsheetError => new SpreadsheetError('invalid', message);
export const tooLarge = (message: string): SpreadsheetError => new SpreadsheetError('too_large', message);

/** A cell as the readers hand it out: text, or the number held by a numeric xlsx cell. */
export type Cell = string | number;
