/**
 * A dialer upload's contacts as they travel and are stored: in chunks of at most
 * `CONTACTS_PER_CHUNK`, each one string (raw deflate of the JSON `[[number, fields], ...]`, base64).
 * A chunk is made where the sheet is read (off the platform thread), and is one
 * `CampaignContactsAdded` event: storing, decoding and freezing a 100,000-contact upload is then
 * 400 short strings, not 200,000 objects made JSON and back in one turn of the platform thread.
 * Contact ids are not in the chunk: they are the upload's number and the row (`first` + index).
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';

/**
 * Small enough that one chunk's work on the platform thread (its contacts' records projected in one
 * commit, the dialer taking them in) stays a few milliseconds, and that the log's in-memory tail
 * (8,192 to 16,384 events) holds tens of MiB of them at most.
 */
export const CONTACTS_PER_CHUNK = 250;

export interface PackedContacts {
  count: number;
  packed: string;
}

export interface UnpackedContact {
  number: string;
  fields: Record<string, string>;
}

export function packContacts(contacts: readonly UnpackedContact[]): PackedContacts {
  const json = JSON.stringify(contacts.map((c) => [c.number, c.fields]));
  return { count: contacts.length, packed: deflateRawSync(json, { level: 1 }).toString('base64') };
}

/** The contacts of a chunk; a chunk that does not decode to `count` of them throws. */
export function unpackContacts({ count, packed }: PackedContacts): UnpackedContact[] {
  const rows = JSON.parse(inflateRawSync(Buffer.from(packed, 'base64')).toString('utf8')) as [string, Record<string, string>][];
  if (!Array.isArray(rows) || rows.length !== count) throw new Error(`packed contacts: ${count} expected, ${Array.isArray(rows) ? rows.length : 'none'} found`);
  return rows.map(([number, fields]) => ({ number, fields }));
}

/** `contacts` in chunks (callers that hold them all already: tests, small uploads). */
export function packAll(contacts: readonly UnpackedContact[]): PackedContacts[] {
  const chunks: PackedContacts[] = [];
  for (let i = 0; i < contacts.length; i += CONTACTS_PER_CHUNK) chunks.push(packContacts(contacts.slice(i, i + CONTACTS_PER_CHUNK)));
  return chunks;
}
