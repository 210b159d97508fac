/** A dialer campaign sheet of `rows` contacts as xlsx bytes, written streaming (the bench's and the fault suite's upload). */
import { PassThrough } from 'node:stream';
import ExcelJS from 'exceljs';

export async function xlsxOf(rows: number): Promise<Buffer> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  const writer = new ExcelJS.stream.xlsx.WorkbookWriter({ stream: out, useSharedStrings: true });
  const ws = writer.addWorksheet('Campaign');
  ws.addRow(['Name', 'Mobile', 'City', 'Account']).commit();
  for (let i = 0; i < rows; i++) ws.addRow([`Customer ${i}`, 9_000_000_000 + i, i % 2 ? 'Pune' : 'Mumbai', `AC-${i.toString().padStart(8, '0')}`]).commit();
  ws.commit();
  await writer.commit();
  return Buffer.concat(chunks);
}
