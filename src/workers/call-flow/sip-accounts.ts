/**
 * Agents' SIP accounts for the SIP switch (CONTRACT 16): the password from the agent's own
 * `sip-password-*` stream (never projected, never read back), and registrations in the read store
 * (collection `sip-bindings`), so a standby worker that takes over rings the same phones.
 */
import type { Context } from '../../context.js';
import type { Binding, SipAccounts } from '../../gateways/switch/sip/registrar.js';
import type { DialogStore, KeptDialog } from '../../gateways/switch/sip/lost-dialogs.js';
import type { AgentDoc } from '../../projections/agents.js';
import { sipPasswordStream } from '../../domain/events.js';

export const SIP_BINDINGS = 'sip-bindings';

type BindingDoc = Binding & Record<string, unknown>;

export function sipAccounts(ctx: Context): SipAccounts {
  return {
    async password(user) {
      // A username two agents share cannot be told apart: neither registers with it.
      const agents = await ctx.reads.find<AgentDoc>('agents', { exists: true, sip: user }, { limit: 2 });
      if (agents.length !== 1) return null;
      const a = agents[0]!;
      const events = await ctx.events.readStream(sipPasswordStream(a.svcId, a.agentId));
      const last = events.at(-1);
      return last?.type === 'SipPasswordSet' ? (last.data as { password: string }).password : null;
    },
    async saveBinding(user, binding) {
      const doc: BindingDoc | null = binding ? { user: binding.user, contact: binding.contact, flow: binding.flow ? { ...binding.flow } : null, expiresAt: binding.expiresAt } : null;
      // Stored before the REGISTER is answered 200: a worker killed right after keeps the binding.
      await ctx.reads.commit([{ collection: SIP_BINDINGS, id: user, doc }], {}, { now: true });
    },
    async locate(number) {
      for (const a of await ctx.reads.find<AgentDoc>('agents', { exists: true, number })) {
        if (/^sips?:/i.test(a.sip)) return { uri: a.sip, flow: null };
        const b = await ctx.reads.get<BindingDoc>(SIP_BINDINGS, a.sip);
        if (b && b.expiresAt > ctx.now()) return { uri: b.contact, flow: b.flow };
      }
      return null;
    },
  };
}

/** Answered legs' SIP dialogs, kept so the worker that takes over ends them should this one be killed (lost-dialogs.ts). */
export const SIP_DIALOGS = 'sip-dialogs';

export function sipDialogs(ctx: Context): DialogStore {
  return {
    async save(entries) {
      // Stored at once (not held back by the read store's coalescing, and so not lost with a killed
      // worker, the very case these are kept for), a turn's entries in one transaction.
      await ctx.reads.commit(
        entries.map(([legId, kept]) => ({ collection: SIP_DIALOGS, id: legId, doc: kept ? { legId, ...kept } : null })),
        {},
        { now: true },
      );
    },
    async all() {
      return (await ctx.reads.find<{ legId: string } & KeptDialog & Record<string, unknown>>(SIP_DIALOGS)).map(({ legId, dialog, branch }) => [legId, branch ? { dialog, branch } : { dialog }]);
    },
  };
}
