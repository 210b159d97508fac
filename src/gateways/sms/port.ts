/**
 * SMS gateway port: hands one message to a provider. It resolves once the provider accepted the
 * message and rejects when it did not (the caller retries). The id is the platform's SMS id; a
 * provider that sees the same id twice should send once (retries after a lost answer).
 */
export interface OutgoingSms {
  id: string;
  svcId: number;
  number: string;
  message: string;
}

export interface SmsGateway {
  send(sms: OutgoingSms): Promise<void>;
}
