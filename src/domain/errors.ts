/** Errors with the status and code of CONTRACT section 2; the HTTP layer renders them as-is. */
export type ErrorCode =
  | 'INVALID_PARAMETER'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'PAYLOAD_TOO_LARGE'
  | 'RATE_LIMITED'
  | 'UNAVAILABLE'
  | 'INTERNAL';

const STATUS: Record<ErrorCode, number> = {
  INVALID_PARAMETER: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMITED: 429,
  UNAVAILABLE: 503,
  INTERNAL: 500,
};

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
    /** A more precise 4xx than the code's own (414, 415, 431), the body still the contract's. */
    status?: number,
  ) {
    super(message);
    this.name = 'AppError';
    this.status = status ?? STATUS[code];
  }
  /** fastify and its plugins read `statusCode`. */
  get statusCode(): number {
    return this.status;
  }
}

export const invalid = (message: string) => new AppError('INVALID_PARAMETER', message);
export const forbidden = (message: string) => new AppError('FORBIDDEN', message);
export const notFound = (message: string) => new AppError('NOT_FOUND', message);
export const conflict = (message: string) => new AppError('CONFLICT', message);
export const unauthorized = (message = 'missing or wrong credentials') => new AppError('UNAUTHORIZED', message);
export const unavailable = (message: string) => new AppError('UNAVAILABLE', message);
