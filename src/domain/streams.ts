/** Stream names (ARCHITECTURE "Streams"). */
export const streams = {
  service: (svcId: number) => `service-${svcId}`,
  user: (userId: number) => `user-${userId}`,
  agent: (svcId: number, agentId: number) => `agent-${svcId}-${agentId}`,
  customer: (svcId: number, number: string) => `customer-${svcId}-${number}`,
  call: (xnid: string) => `call-${xnid}`,
  otp: (svcId: number, number: string) => `otp-${svcId}-${number}`,
  sms: (id: string) => `sms-${id}`,
  schedule: (id: string) => `schedule-${id}`,
  campaign: (svcId: number, campaignId: number) => `campaign-${svcId}-${campaignId}`,
  subscriber: (svcId: number, id: number) => `subscriber-${svcId}-${id}`,
  delivery: (id: string) => `delivery-${id}`,
};
