/** The user aggregate (`user-<id>`): credentials, profile, services. */
import type { Decider } from '../decider.js';
import type { UserEvent, UserProvisionedData } from '../../domain/events.js';
import { notFound } from '../../domain/errors.js';

/** The user as provisioned (password hash included), and what provisioning and the user changed since. */
export interface UserState extends UserProvisionedData {
  exists: boolean;
  /** The hash provisioning last set: re-provisioning the same password keeps any later change. */
  provisionedPasswordHash: string;
  /** Profile as provisioning last set it, to tell a changed document from an unchanged one. */
  provisioned: { name: string; email: string; number: string } | null;
}

export type UserCommand =
  | { type: 'ChangePassword'; userId: number; passwordHash: string }
  | { type: 'UpdateProfile'; userId: number; email?: string; number?: string };

export const userDecider: Decider<UserCommand, UserState, UserEvent> = {
  initialState: () => ({
    exists: false,
    userId: 0,
    username: '',
    name: '',
    email: '',
    number: '',
    admin: false,
    agentId: null,
    services: [],
    customer: '',
    passwordHash: '',
    provisionedPasswordHash: '',
    provisioned: null,
  }),
  evolve(state, event) {
    switch (event.type) {
      case 'UserProvisioned': {
        const d = event.data;
        const hash = d.passwordHash || state.passwordHash;
        return {
          ...state,
          exists: true,
          userId: d.userId,
          username: d.username,
          name: d.name,
          email: d.email,
          number: d.number,
          admin: d.admin,
          agentId: d.agentId,
          services: d.services,
          customer: d.customer,
          passwordHash: hash,
          provisionedPasswordHash: d.passwordHash || state.provisionedPasswordHash,
          provisioned: { name: d.name, email: d.email, number: d.number },
        };
      }
      case 'UserPasswordChanged':
        return { ...state, passwordHash: event.data.passwordHash };
      case 'UserProfileUpdated':
        return {
          ...state,
          email: event.data.email ?? state.email,
          number: event.data.number ?? state.number,
        };
    }
  },
  decide(command, state) {
    if (!state.exists) throw notFound(`user ${command.userId} not found`);
    switch (command.type) {
      case 'ChangePassword':
        return [{ type: 'UserPasswordChanged', data: { userId: state.userId, passwordHash: command.passwordHash } }];
      case 'UpdateProfile': {
        const data: { userId: number; email?: string; number?: string } = { userId: state.userId };
        if (command.email !== undefined && command.email !== state.email) data.email = command.email;
        if (command.number !== undefined && command.number !== state.number) data.number = command.number;
        return data.email === undefined && data.number === undefined ? [] : [{ type: 'UserProfileUpdated', data }];
      }
    }
  },
};
