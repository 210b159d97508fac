/** Read models `users` (by id) and `usernames` (username -> user id), used by authentication. */
import type { RecordedEvent } from '../gateways/event-store/port.js';
import type { UserEvent } from '../domain/events.js';
import { userDecider, type UserState } from '../commands/user/user.js';
import type { Projection } from './projection.js';

export interface UserDoc extends Record<string, unknown> {
  id: number;
  username: string;
  name: string;
  email: string;
  number: string;
  admin: boolean;
  agentId: number | null;
  services: number[];
  customer: string;
  passwordHash: string;
  active: boolean;
}

const isUserEvent = (e: RecordedEvent) =>
  e.type === 'UserProvisioned' || e.type === 'UserPasswordChanged' || e.type === 'UserProfileUpdated';

function toState(doc: UserDoc | null): UserState {
  const s = userDecider.initialState();
  if (!doc) return s;
  return {
    ...s,
    exists: true,
    userId: doc.id,
    username: doc.username,
    name: doc.name,
    email: doc.email,
    number: doc.number,
    admin: doc.admin,
    agentId: doc.agentId,
    services: doc.services,
    customer: doc.customer,
    passwordHash: doc.passwordHash,
  };
}

export const usersProjection: Projection<UserDoc> = {
  name: 'users',
  keys: (e) => (isUserEvent(e) ? [String((e.data as { userId: number }).userId)] : []),
  evolve(doc, e) {
    // The same evolve as the aggregate: the read model cannot drift from the decider's view.
    const s = userDecider.evolve(toState(doc), { type: e.type, data: e.data } as UserEvent);
    return {
      id: s.userId,
      username: s.username,
      name: s.name,
      email: s.email,
      number: s.number,
      admin: s.admin,
      agentId: s.agentId,
      services: s.services,
      customer: s.customer,
      passwordHash: s.passwordHash,
      active: true,
    };
  },
};

export interface UsernameDoc extends Record<string, unknown> {
  userId: number;
}

export const usernamesProjection: Projection<UsernameDoc> = {
  name: 'usernames',
  keys: (e) => (e.type === 'UsernameClaimed' || e.type === 'UsernameReleased' ? [(e.data as { username: string }).username] : []),
  evolve: (_doc, e) => (e.type === 'UsernameClaimed' ? { userId: (e.data as { userId: number }).userId } : null),
};
