/** The user decider as given events / when command / then events (or error). */
import { describe, expect, it } from 'vitest';
import { userDecider } from '../../../src/commands/user/user.js';
import { deciderSpec } from '../../support/decider-spec.js';
import type { UserEvent, UserProvisionedData } from '../../../src/domain/events.js';

const provisioned = (over: Partial<UserProvisionedData> = {}): UserEvent => ({
  type: 'UserProvisioned',
  data: {
    userId: 2,
    username: 'asha',
    passwordHash: 'hash-1',
    name: 'Asha',
    email: 'asha@acme.test',
    number: '9100001001',
    admin: false,
    agentId: 1001,
    services: [101],
    customer: 'acme',
    ...over,
  },
});

const { given } = deciderSpec(userDecider);

describe('userDecider', () => {
  it('refuses commands for a user that was never provisioned', () => {
    given().when({ type: 'ChangePassword', userId: 9, passwordHash: 'h' }).thenThrows('NOT_FOUND');
    given().when({ type: 'UpdateProfile', userId: 9, email: 'a@b.c' }).thenThrows('NOT_FOUND');
  });

  it('ChangePassword records the new hash', () => {
    given(provisioned())
      .when({ type: 'ChangePassword', userId: 2, passwordHash: 'hash-2' })
      .then({ type: 'UserPasswordChanged', data: { userId: 2, passwordHash: 'hash-2' } });
  });

  it('UpdateProfile records only the fields that change', () => {
    given(provisioned())
      .when({ type: 'UpdateProfile', userId: 2, email: 'new@acme.test', number: '9100001001' })
      .then({ type: 'UserProfileUpdated', data: { userId: 2, email: 'new@acme.test' } });
    given(provisioned())
      .when({ type: 'UpdateProfile', userId: 2, number: '919100001002' })
      .then({ type: 'UserProfileUpdated', data: { userId: 2, number: '919100001002' } });
  });

  it('UpdateProfile with nothing new decides no events', () => {
    given(provisioned()).when({ type: 'UpdateProfile', userId: 2, email: 'asha@acme.test' }).thenNothingHappened();
    given(provisioned(), { type: 'UserProfileUpdated', data: { userId: 2, email: 'x@acme.test' } })
      .when({ type: 'UpdateProfile', userId: 2, email: 'x@acme.test' })
      .thenNothingHappened();
  });

  it('evolve: a changed password wins over the provisioned one; provisioning with an empty hash keeps it', () => {
    const s = given([
      provisioned(),
      { type: 'UserPasswordChanged', data: { userId: 2, passwordHash: 'chosen' } },
      provisioned({ passwordHash: '', name: 'Asha K' }),
    ]).state;
    expect(s.passwordHash).toBe('chosen');
    expect(s.provisionedPasswordHash).toBe('hash-1');
    expect(s.name).toBe('Asha K');
    const reset = given([provisioned(), { type: 'UserPasswordChanged', data: { userId: 2, passwordHash: 'chosen' } }, provisioned({ passwordHash: 'hash-3' })]).state;
    expect(reset.passwordHash).toBe('hash-3');
    expect(reset.provisionedPasswordHash).toBe('hash-3');
  });

  it('evolve: a profile update changes only the fields it carries', () => {
    const s = given([provisioned(), { type: 'UserProfileUpdated', data: { userId: 2, number: '919999999999' } }]).state;
    expect(s).toMatchObject({ email: 'asha@acme.test', number: '919999999999', exists: true, services: [101], customer: 'acme' });
  });
});
