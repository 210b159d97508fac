/** POST /api/v1/dialer: upload a campaign's contacts (.xlsx or .csv, multipart). */
import type { RouteRegistrar } from '../route.js';
import { UPLOAD_LIMIT, defineRoute, text, type UploadedFile } from '../route.js';
import { SUCCESS } from '../answers.js';
import { scopeService } from '../scope.js';
import { AppError, invalid } from '../../domain/errors.js';
import { readContacts, SpreadsheetError, type Contact } from '../../gateways/spreadsheet/contacts.js';
import { uploadCampaign } from '../../commands/dialer/upload.js';

/** Rows of one upload (CONTRACT section 8). */
export const MAX_UPLOAD_ROWS = 100_000;

interface ReadFile {
  fileName: string;
  contacts: Contact[];
  skipped: number;
}

/** Reads the spreadsheet as it streams in; a file that is not one (or too big) is refused whole. */
async function readUpload(upload: UploadedFile): Promise<ReadFile> {
  const contacts: Contact[] = [];
  try {
    const r = await readContacts(upload.file as never, upload.filename, (c) => void contacts.push(c), { maxRows: MAX_UPLOAD_ROWS, maxBytes: UPLOAD_LIMIT });
    if ((upload.file as { truncated?: boolean }).truncated) throw new AppError('PAYLOAD_TOO_LARGE', `file: over the upload limit of ${UPLOAD_LIMIT} bytes`);
    return { fileName: upload.filename, contacts, skipped: r.skipped };
  } catch (err) {
    // Busboy stops the stream at the limit, so a cut-off file may fail to parse first: still 413.
    if ((upload.file as { truncated?: boolean }).truncated) throw new AppError('PAYLOAD_TOO_LARGE', `file: over the upload limit of ${UPLOAD_LIMIT} bytes`);
    if (err instanceof SpreadsheetError) {
      throw err.kind === 'too_large' ? new AppError('PAYLOAD_TOO_LARGE', `file: ${err.message}`) : invalid(`file: ${err.message}`);
    }
    throw err;
  }
}

export const dialerRoutes: RouteRegistrar = (app, ctx) => {
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
      return readUpload(upload);
    },
    handler: async ({ p, user, files }) => {
      const svcId = scopeService(user, p['svc-id'], 'svc-id', true);
      const file = files.file as ReadFile | undefined;
      if (!file) throw invalid('file is required: a multipart .xlsx or .csv upload');
      const position = await uploadCampaign(ctx, {
        svcId,
        campaignId: p['campaign-id'],
        endTime: p['end-time'],
        fileName: file.fileName,
        contacts: file.contacts.map((c) => ({ number: c.number, fields: { ...c.fields } })),
        skipped: file.skipped,
        invalidateOld: p['invalidate-old-data'] ?? false,
      });
      await ctx.sync.waitFor(position);
      return text('Success');
    },
  });
};
