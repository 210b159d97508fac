/** POST /api/v1/dialer: upload a campaign's contacts (.xlsx or .csv, multipart). */
import type { RouteRegistrar } from '../route.js';
import { UPLOAD_LIMIT, defineRoute, text, type UploadedFile } from '../route.js';
import { SUCCESS } from '../answers.js';
import { scopeService } from '../scope.js';
import { AppError, invalid } from '../../domain/errors.js';
import { SpreadsheetError } from '../../gateways/spreadsheet/contacts.js';
import { SpreadsheetReaders, UploadsBusyError, type ReadUpload } from '../../gateways/spreadsheet/thread.js';
import type { Context } from '../../context.js';
import { availableParallelism } from 'node:os';
import { uploadCampaign } from '../../commands/dialer/upload.js';

/** How long an upload's answer waits for the read models to show it. */
const UPLOAD_CATCH_UP_MS = 60_000;

/** Rows of one upload (CONTRACT section 8). */
export const MAX_UPLOAD_ROWS = 100_000;

/** An upload as received: its bytes, not read yet. */
interface ReceivedFile {
  fileName: string;
  bytes: Buffer;
}

const tooLargeUpload = () => new AppError('PAYLOAD_TOO_LARGE', `file: over the upload limit of ${UPLOAD_LIMIT} bytes`);

/** Takes the file in as it streams (at most UPLOAD_LIMIT bytes); reading it is the handler's, off the platform thread. */
async function receive(upload: UploadedFile): Promise<ReceivedFile> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of upload.file) {
    total += chunk.length;
    if (total > UPLOAD_LIMIT) throw tooLargeUpload();
    chunks.push(chunk);
  }
  // Busboy stops the stream at the limit.
  if ((upload.file as { truncated?: boolean }).truncated) throw tooLargeUpload();
  return { fileName: upload.filename, bytes: Buffer.concat(chunks, total) };
}

/** Readers of uploads, on threads of their own (see SpreadsheetReaders): one per app. */
function uploadReaders(): SpreadsheetReaders {
  // One core stays the platform thread's.
  return new SpreadsheetReaders({ threads: Math.max(1, Math.min(2, availableParallelism() - 1)), perTenantWaiting: 1, maxHeapMiB: 160 });
}

/** The file's contacts; a file that is not a spreadsheet (or too big) is refused whole, in words of our own. */
async function readUpload(ctx: Context, readers: SpreadsheetReaders, tenant: string, file: ReceivedFile): Promise<ReadUpload> {
  try {
    return await readers.read(tenant, file.bytes, file.fileName, { maxRows: MAX_UPLOAD_ROWS, maxBytes: UPLOAD_LIMIT });
  } catch (err) {
    if (err instanceof SpreadsheetError) {
      throw err.kind === 'too_large' ? new AppError('PAYLOAD_TOO_LARGE', `file: ${err.message}`) : invalid(`file: ${err.message}`);
    }
    if (err instanceof UploadsBusyError) {
      throw new AppError('RATE_LIMITED', 'file: uploads of this customer are already being read; try again when they are done', { 'retry-after': '5' });
    }
    // Never an internal error's text to the client: it goes to the log.
    ctx.logger.warn({ err: (err as Error).message, fileName: file.fileName }, 'dialer upload could not be read');
    throw invalid('file: not a readable .xlsx or .csv spreadsheet');
  }
}

export const dialerRoutes: RouteRegistrar = (app, ctx) => {
  const readers = uploadReaders();
  defineRoute(app, ctx, {
    method: 'POST',
    url: '/api/v1/dialer',
    summary: "Upload a dialer campaign's contacts (.xlsx or .csv with a column of numbers)",
    tags: ['dialer'],
    auth: 'user',
    response: SUCCESS,
    bodyLimit: UPLOAD_LIMIT + 64 * 1024,
    params: {
      'svc-id': { type: 'integer', required: true, min: 1 },
      'campaign-id': { type: 'integer', required: true, min: 1 },
      'end-time': { type: 'epoch', required: true },
      'invalidate-old-data': { type: 'boolean' },
    },
    file: async (upload) => {
      if (upload.fieldname !== 'file') throw invalid(`unexpected file field ${upload.fieldname}; the spreadsheet goes in "file"`);
      return receive(upload);
    },
    handler: async ({ p, user, files }) => {
      const svcId = scopeService(user, p['svc-id'], 'svc-id', true);
      const received = files.file as ReceivedFile | undefined;
      if (!received) throw invalid('file is required: a multipart .xlsx or .csv upload');
      const file = await readUpload(ctx, readers, user.customer, received);
      const position = await uploadCampaign(ctx, {
        svcId,
        campaignId: p['campaign-id'],
        endTime: p['end-time'],
        fileName: received.fileName,
        contacts: file.chunks,
        skipped: file.skipped,
        invalidateOld: p['invalidate-old-data'] ?? false,
      });
      // The upload is stored: its answer waits for the read models to show it, as every answer does
      // (the campaign's counts; its contacts' own records are the lagging read model, see ReadSync).
      await ctx.sync.waitFor(position, UPLOAD_CATCH_UP_MS);
      return text('Success');
    },
  });
};
