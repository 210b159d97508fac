/**
 * Recording URLs: `PUBLIC_BASE_URL/recordings/<xnid>.wav?exp=<epoch s>&sig=<hmac>`, signed with a
 * platform key that lives in the event store (stream `platform-keys`, src/commands/platform-key.ts),
 * so every process and every restart signs and checks alike. The simulator's recording is a short tone generated on request.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export class RecordingSigner {
  constructor(
    private readonly key: Buffer,
    private baseUrl: string,
  ) {}

  /** With PORT=0 the base URL is known only once the server listens. */
  setBaseUrl(url: string) {
    this.baseUrl = url.replace(/\/+$/, '');
  }

  private sig(xnid: string, exp: number): string {
    return createHmac('sha256', this.key).update(`${xnid}.${exp}`).digest('base64url');
  }

  /** A URL valid until `expiresAtMs`. */
  url(xnid: string, expiresAtMs: number): string {
    const exp = Math.floor(expiresAtMs / 1000);
    return `${this.baseUrl}/recordings/${xnid}.wav?exp=${exp}&sig=${this.sig(xnid, exp)}`;
  }

  /** Whether a signature is right and unexpired at `nowMs`. */
  verify(xnid: string, exp: string | undefined, sig: string | undefined, nowMs: number): 'ok' | 'bad' | 'expired' {
    if (!exp || !sig || !/^\d{1,12}$/.test(exp)) return 'bad';
    const want = Buffer.from(this.sig(xnid, Number(exp)));
    const got = Buffer.from(sig);
    if (want.length !== got.length || !timingSafeEqual(want, got)) return 'bad';
    return Number(exp) * 1000 < nowMs ? 'expired' : 'ok';
  }
}

/** A mono 8 kHz 16-bit PCM WAV of a 440 Hz tone, as the simulator's recording. */
export function simulatedRecording(seconds: number): Buffer {
  const rate = 8000;
  const samples = Math.max(1, Math.round(rate * seconds));
  const buf = Buffer.alloc(44 + samples * 2);
  buf.write('RIFF', 0);
  buf.writeUInt32LE(36 + samples * 2, 4);
  buf.write('WAVE', 8);
  buf.write('fmt ', 12);
  buf.writeUInt32LE(16, 16);
  buf.writeUInt16LE(1, 20);
  buf.writeUInt16LE(1, 22);
  buf.writeUInt32LE(rate, 24);
  buf.writeUInt32LE(rate * 2, 28);
  buf.writeUInt16LE(2, 32);
  buf.writeUInt16LE(16, 34);
  buf.write('data', 36);
  buf.writeUInt32LE(samples * 2, 40);
  for (let i = 0; i < samples; i++) buf.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), 44 + i * 2);
  return buf;
}
