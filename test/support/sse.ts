/** A minimal server-sent events client over fetch, for tests: collects messages as they arrive. */
import { until } from './until.js';

export interface SseMessage {
  event: string;
  id: string | null;
  data: string;
}

export interface SseClient {
  status: number;
  headers: Headers;
  messages: SseMessage[];
  /** Comment lines (`: ...`) received. */
  comments: string[];
  /** Waits until `n` messages (optionally of one event name) have arrived; returns them. */
  waitFor(n: number, event?: string, timeoutMs?: number): Promise<SseMessage[]>;
  close(): void;
}

export async function openSse(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: abort.signal });
  const messages: SseMessage[] = [];
  const comments: string[] = [];
  if (res.ok && res.body) {
    void (async () => {
      const decoder = new TextDecoder();
      let buf = '';
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          buf += decoder.decode(chunk, { stream: true });
          let end: number;
          while ((end = buf.indexOf('\n\n')) !== -1) {
            const block = buf.slice(0, end);
            buf = buf.slice(end + 2);
            const msg: SseMessage = { event: 'message', id: null, data: '' };
            let isMessage = false;
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) comments.push(line.slice(1).trim());
              else if (line.startsWith('event: ')) (msg.event = line.slice(7)), (isMessage = true);
              else if (line.startsWith('id: ')) (msg.id = line.slice(4)), (isMessage = true);
              else if (line.startsWith('data: ')) (msg.data += (msg.data ? '\n' : '') + line.slice(6)), (isMessage = true);
            }
            if (isMessage) messages.push(msg);
          }
        }
      } catch {
        // aborted
      }
    })();
  }
  return {
    status: res.status,
    headers: res.headers,
    messages,
    comments,
    async waitFor(n, event, timeoutMs = 10_000) {
      const pick = () => (event ? messages.filter((m) => m.event === event) : messages);
      await until(() => pick().length >= n, `${n} ${event ?? ''} messages (have ${pick().length})`, timeoutMs);
      return pick();
    },
    close: () => abort.abort(),
  };
}

export const basic = ([u, p]: [string, string]) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;
