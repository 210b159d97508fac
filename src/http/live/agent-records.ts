/**
 * The agent record as it stood right after a given agent event, for `event: agent` messages.
 * The read model holds only the newest state, so each stream of live events folds the agent
 * streams it meets with the read model's own projection: once from the stream (the first time an
 * agent is seen), then one event at a time.
 */
import type { EventStore, RecordedEvent } from '../../gateways/event-store/port.js';
import type { ReadStore } from '../../gateways/read-store/port.js';
import { agentsProjection, type AgentDoc } from '../../projections/agents.js';

interface Folded {
  revision: number;
  doc: AgentDoc | null;
}

export class AgentRecordFolder {
  private readonly folded = new Map<string, Folded>();

  constructor(
    private readonly events: EventStore,
    private readonly reads: ReadStore,
  ) {}

  /** The agent document after `e` (an event of an `agent-<svc>-<id>` stream). */
  async after(e: RecordedEvent): Promise<AgentDoc | null> {
    const [key] = agentsProjection.keys(e);
    if (key === undefined) return null;
    let f = this.folded.get(e.streamId);
    if (f && f.revision === e.revision - 1) {
      f = { revision: e.revision, doc: agentsProjection.evolve(f.doc, e, key) };
    } else if (!f || f.revision !== e.revision) {
      // First sight of this agent (or a gap): fold its stream up to this event.
      const current = await this.reads.get<AgentDoc>('agents', key);
      let doc: AgentDoc | null = null;
      for (const past of await this.events.readStream(e.streamId, { maxCount: e.revision + 1 })) doc = agentsProjection.evolve(doc, past, key);
      // The user holding the agent's credentials is not in the agent's stream.
      if (doc) doc = { ...doc, userId: current?.userId ?? doc.userId };
      f = { revision: e.revision, doc };
    }
    this.folded.set(e.streamId, f);
    return f.doc;
  }
}
