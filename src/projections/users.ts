/** Read models `users` (by id) and `usernames` (username -> user id), used by authentication. */
import { USER_EVENT_TYPES, type UserProvisionedData, type UsernameEvent } from '../domain/events.js';
import { userDecider, type UserState } from '../commands/user/user.js';
import { projection, type Projection } from './projection.js';

/** The user as provisioned, by `id` (the event's `userId`), with its current password hash and profile. */
export interface UserDoc extends Omit<UserProvisionedData, 'userId'>, Record<string, unknown> {
  id: number;
  active: boolean;
}

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

export const usersProjection: Projection<UserDoc> = projection({
  name: 'users',
  canHandle: USER_EVENT_TYPES,
  keys: (e) => [String(e.data.userId)],
  evolve(doc, e) {
    // The same evolve as the aggregate: the read model cannot drift from the decider's view.
    const s = userDecider.evolve(toState(doc), e);
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
});

export interface UsernameDoc extends Pick<UsernameEvent['data'], 'userId'>, Record<string, unknown> {}

export const usernamesProjection: Projection<UsernameDoc> = projection({
  name: 'usernames',
  canHandle: ['UsernameClaimed', 'UsernameReleased'],
  keys: (e) => [e.data.username],
  evolve: (_doc, e) => (e.type === 'UsernameClaimed' ? { userId: e.data.userId } : null),
});
