import { describe, expect, it } from 'vitest';
import { RecordingSigner, simulatedRecording } from '../../src/domain/recording.js';

describe('recording URLs', () => {
  const signer = new RecordingSigner(Buffer.alloc(32, 7), 'http://h:1');
  const xnid = '11111111-1111-4111-8111-111111111111';
  const parts = (url: string) => {
    const u = new URL(url);
    return [u.searchParams.get('exp') ?? undefined, u.searchParams.get('sig') ?? undefined] as const;
  };

  it('accepts its own signature until it expires, then refuses it', () => {
    const url = signer.url(xnid, 1_000_000);
    expect(url).toMatch(/^http:\/\/h:1\/recordings\/11111111-1111-4111-8111-111111111111\.wav\?exp=1000&sig=/);
    const [exp, sig] = parts(url);
    expect(signer.verify(xnid, exp, sig, 999_000)).toBe('ok');
    expect(signer.verify(xnid, exp, sig, 1_000_001)).toBe('expired');
  });

  it('refuses a signature for another call, a changed expiry, another key or none', () => {
    const [exp, sig] = parts(signer.url(xnid, 5_000_000));
    expect(signer.verify('22222222-2222-4222-8222-222222222222', exp, sig, 0)).toBe('bad');
    expect(signer.verify(xnid, '9999999', sig, 0)).toBe('bad');
    expect(new RecordingSigner(Buffer.alloc(32, 8), 'http://h:1').verify(xnid, exp, sig, 0)).toBe('bad');
    expect(signer.verify(xnid, undefined, undefined, 0)).toBe('bad');
  });

  it('the simulated recording is a playable 8 kHz mono WAV of the asked length', () => {
    const wav = simulatedRecording(2);
    expect(wav.subarray(0, 4).toString()).toBe('RIFF');
    expect(wav.subarray(8, 12).toString()).toBe('WAVE');
    expect(wav.readUInt32LE(24)).toBe(8000);
    expect(wav.length).toBe(44 + 2 * 8000 * 2);
  });
});
