/**
 * Stream names (ARCHITECTURE "Streams"). Every name is lower case: KurrentDB takes two names that
 * differ only in case for one stream in a multi-stream append (and refuses the append), while it
 * stores and reads them as two; so an id given in another case (a call id typed in capitals) names
 * the same stream, never a second one.
 */
const lower = (s: string) => s.toLowerCase();

export const streams = {
  service: (svcId: number) => `service-${svcId}`,
  user: (userId: number) => `user-${userId}`,
  agent: (svcId: number, agentId: number) => `agent-${svcId}-${agentId}`,
  customer: (svcId: number, number: string) => `customer-${svcId}-${lower(number)}`,
  call: (xnid: string) => `call-${lower(xnid)}`,
  otp: (svcId: number, number: string) => `otp-${svcId}-${lower(number)}`,
  sms: (id: string) => `sms-${lower(id)}`,
  schedule: (id: string) => `schedule-${lower(id)}`,
  campaign: (svcId: number, campaignId: number) => `campaign-${svcId}-${campaignId}`,
  subscriber: (svcId: number, id: number) => `subscriber-${svcId}-${id}`,
  delivery: (id: string) => `delivery-${lower(id)}`,
};
