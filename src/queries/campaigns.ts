/** Reads of the dialer campaigns read model. */
import type { Context } from '../context.js';
import type { CampaignDoc } from '../projections/campaigns.js';

/** Service `svcId`'s campaigns, by campaign id. */
export const campaignsOf = (ctx: Context, svcId: number): Promise<CampaignDoc[]> => ctx.reads.find<CampaignDoc>('campaigns', { svcId }, { orderBy: { field: 'campaignId' } });
