/** Provisioning as events: idempotent, all-or-nothing, messages that name the bad field. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyProvisioning } from '../../../src/commands/provisioning/provision.js';
import { fold, toDomain } from '../../../src/commands/decider.js';
import { userDecider } from '../../../src/commands/user/user.js';
import { SqliteEventStore } from '../../../src/gateways/event-store/sqlite.js';
import type { UserEvent } from '../../../src/domain/events.js';
import { verifyPassword } from '../../../src/domain/password.js';
import { exampleDoc } from '../../support/server.js';

type Doc = ReturnType<typeof exampleDoc>;

describe('applyProvisioning', () => {
  let store: SqliteEventStore;
  beforeEach(() => {
    store = new SqliteEventStore(':memory:');
  });
  afterEach(async () => {
    await store.close();
  });

  const userState = async (id: number) => fold(userDecider, (await store.readStream(`user-${id}`)).map((e) => toDomain<UserEvent>(e)));

  it('applies the example document as events and reports what it holds', async () => {
    const r = await applyProvisioning(store, exampleDoc());
    expect(r).toMatchObject({ services: 1, agents: 1, users: 2 });
    expect(r.appended).toBeGreaterThan(0);
    expect(r.position).toBe(await store.headPosition());
    const types = (await store.readAll()).map((e) => `${e.streamId} ${e.type}`);
    expect(types).toEqual(
      expect.arrayContaining([
        'service-101 ServiceProvisioned',
        'agent-101-1001 AgentProvisioned',
        'customer-101-9876543210 CustomerProvisioned',
        'user-1 UserProvisioned',
        'user-2 UserProvisioned',
        'username-acme-admin UsernameClaimed',
        'username-asha UsernameClaimed',
      ]),
    );
    const admin = await userState(1);
    expect(admin).toMatchObject({ username: 'acme-admin', admin: true, agentId: null, services: [101], customer: 'acme' });
    expect(admin.passwordHash).toMatch(/^scrypt\$/);
    expect(await verifyPassword('s3cret-admin', admin.passwordHash)).toBe(true);
  });

  it('applying the same document twice appends nothing the second time', async () => {
    await applyProvisioning(store, exampleDoc());
    const head = await store.headPosition();
    const again = await applyProvisioning(store, exampleDoc());
    expect(again).toMatchObject({ services: 1, agents: 1, users: 2, appended: 0, position: head });
    expect(await store.headPosition()).toBe(head);
  });

  it('re-applying a user with the same password keeps its hash; a new password replaces it', async () => {
    await applyProvisioning(store, exampleDoc());
    const first = (await userState(2)).passwordHash;
    const doc = exampleDoc();
    doc.users[1].name = 'Asha K';
    const r = await applyProvisioning(store, doc);
    expect(r.appended).toBe(1);
    const renamed = await userState(2);
    expect(renamed.name).toBe('Asha K');
    expect(renamed.passwordHash).toBe(first);
    doc.users[1].password = 'another-secret';
    await applyProvisioning(store, doc);
    const reset = (await userState(2)).passwordHash;
    expect(reset).not.toBe(first);
    expect(await verifyPassword('another-secret', reset)).toBe(true);
  });

  it('re-applying keeps a password the user changed since', async () => {
    await applyProvisioning(store, exampleDoc());
    await store.appendToStream('user-2', [{ type: 'UserPasswordChanged', data: { userId: 2, passwordHash: 'chosen-by-user' } }]);
    const head = await store.headPosition();
    expect((await applyProvisioning(store, exampleDoc())).appended).toBe(0);
    expect(await store.headPosition()).toBe(head);
    expect((await userState(2)).passwordHash).toBe('chosen-by-user');
  });

  it('changes only the records that changed and leaves unlisted ones alone', async () => {
    await applyProvisioning(store, exampleDoc());
    const doc = exampleDoc();
    doc.services[0].dids.push('8000000102');
    doc.users = [];
    const before = await store.readAll();
    const r = await applyProvisioning(store, doc);
    expect(r.appended).toBe(1);
    const added = (await store.readAll({ after: before.at(-1)!.position })).map((e) => e.type);
    expect(added).toEqual(['ServiceProvisioned']);
    expect((await userState(1)).exists).toBe(true);
  });

  it('moves a username from one user to another only through release and claim', async () => {
    await applyProvisioning(store, exampleDoc());
    const doc = exampleDoc();
    doc.users[1].username = 'asha-k';
    await applyProvisioning(store, doc);
    expect((await store.readStream('username-asha')).map((e) => e.type)).toEqual(['UsernameClaimed', 'UsernameReleased']);
    expect((await store.readStream('username-asha-k')).map((e) => e.type)).toEqual(['UsernameClaimed']);
    // The freed name can go to another user now.
    const next = { services: [], users: [{ id: 3, username: 'asha', password: 'pw-for-three', services: [101] }] };
    await applyProvisioning(store, next);
    expect((await store.readStream('username-asha')).map((e) => e.type)).toEqual(['UsernameClaimed', 'UsernameReleased', 'UsernameClaimed']);
  });

  it('calling hours and dnd are provisioning events, applied idempotently, and can be taken back', async () => {
    await applyProvisioning(store, exampleDoc());
    const doc = exampleDoc();
    doc.services[0].callingHours = { from: '22:00', to: '06:00' };
    doc.services[0].customers[0].dnd = true;
    const head = await store.headPosition();
    expect((await applyProvisioning(store, doc)).appended).toBe(2);
    const added = await store.readAll({ after: head });
    expect(added.map((e) => `${e.streamId} ${e.type}`)).toEqual(['service-101 ServiceProvisioned', 'customer-101-9876543210 CustomerProvisioned']);
    expect(added[0]!.data).toMatchObject({ callingHours: { from: '22:00', to: '06:00' } });
    expect(added[1]!.data).toMatchObject({ number: '9876543210', dnd: true });
    expect((await applyProvisioning(store, doc)).appended).toBe(0);
    // dnd: false is the same as leaving it out; dropping calling hours is a change.
    const back = exampleDoc();
    back.services[0].customers[0].dnd = false;
    const r = await applyProvisioning(store, back);
    expect(r.appended).toBe(2);
    const last = await store.readAll({ after: r.position - 2 });
    expect(last[0]!.data).not.toHaveProperty('callingHours');
    expect(last[1]!.data).not.toHaveProperty('dnd');
    expect((await applyProvisioning(store, exampleDoc())).appended).toBe(0);
  });

  describe('refuses an invalid document whole, naming the field', () => {
    const cases: Array<[string, (d: Doc) => unknown, RegExp]> = [
      ['a service without an id', (d) => delete d.services[0].id, /services\[0\]\.id is required/],
      ['a service id that is not an integer', (d) => (d.services[0].id = '101'), /services\[0\]\.id/],
      ['a bad DID', (d) => (d.services[0].dids = ['12ab']), /services\[0\]\.dids\[0\] has an invalid format/],
      ['a bad agent phone number', (d) => (d.services[0].agents[0].number = '123'), /services\[0\]\.agents\[0\]\.number/],
      ['a bad blocked number', (d) => d.services[0].blocked.push('+12'), /services\[0\]\.blocked\[1\]/],
      ['an unknown time zone', (d) => (d.services[0].timezone = 'Mars/Olympus'), /services\[0\]\.timezone/],
      ['a service id given twice', (d) => d.services.push({ ...d.services[0], name: 'again' }), /services\[1\]\.id 101 appears twice/],
      ['an agent skill the service lacks', (d) => (d.services[0].agents[0].skills[0].skillId = 9), /services\[0\]\.agents\[0\]\.skills\[0\]\.skillId/],
      ['a webhook URL that is not http(s)', (d) => (d.services[0].webhook.url = 'ftp://x'), /services\[0\]\.webhook\.url/],
      ['a webhook without its secret', (d) => delete d.services[0].webhook.secret, /services\[0\]\.webhook\.secret is required/],
      ['a bad user number (a nullable field)', (d) => (d.users[0].number = '12'), /users\[0\]\.number has an invalid format/],
      ['an empty socket key', (d) => (d.services[0].socketKey = ''), /services\[0\]\.socketKey must NOT have fewer than 1 characters/],
      [
        'a user with services of two customers',
        (d) => {
          d.services.push({ id: 202, name: 'Globex', customer: 'globex' });
          d.users[0].services = [101, 202];
        },
        /users\[0\]\.services: services of one user must belong to one customer/,
      ],
      ['a duplicate username', (d) => (d.users[1].username = 'acme-admin'), /users\[1\]\.username "acme-admin" appears twice/],
      ['a duplicate user id', (d) => (d.users[1].id = 1), /users\[1\]\.id 1 appears twice/],
      ['a user of a service nobody provisioned', (d) => (d.users[1].services = [999]), /users\[1\]\.services\[0\]: service 999 is not provisioned/],
      ['an unknown agentId', (d) => (d.users[1].agentId = 4242), /users\[1\]\.agentId 4242 is not an agent/],
      ['a user without a password', (d) => delete d.users[0].password, /users\[0\]\.password is required/],
      ['a user with no services', (d) => (d.users[0].services = []), /users\[0\]\.services/],
      ['a username with a colon', (d) => (d.users[0].username = 'a:b'), /users\[0\]\.username has an invalid format/],
      ['a bad user e-mail', (d) => (d.users[0].email = 'nope'), /users\[0\]\.email/],
      ['no services at all', (d) => delete d.services, /services is required/],
      ['calling hours not HH:MM', (d) => (d.services[0].callingHours = { from: '9:00', to: '21:00' }), /services\[0\]\.callingHours\.from "9:00" must be HH:MM, 24-hour/],
      ['calling hours past 23:59', (d) => (d.services[0].callingHours = { from: '09:00', to: '24:00' }), /services\[0\]\.callingHours\.to "24:00" must be HH:MM/],
      ['calling hours from == to', (d) => (d.services[0].callingHours = { from: '09:00', to: '09:00' }), /services\[0\]\.callingHours\.from must differ from to/],
      ['calling hours without to', (d) => (d.services[0].callingHours = { from: '09:00' }), /services\[0\]\.callingHours\.to is required/],
      ['calling hours as a string', (d) => (d.services[0].callingHours = '09:00-21:00'), /services\[0\]\.callingHours must be object/],
      ['a dnd that is not a boolean', (d) => (d.services[0].customers[0].dnd = 'yes'), /services\[0\]\.customers\[0\]\.dnd must be boolean/],
    ];
    for (const [what, mutate, message] of cases) {
      it(what, async () => {
        const doc = exampleDoc();
        mutate(doc);
        await expect(applyProvisioning(store, doc)).rejects.toMatchObject({ code: 'INVALID_PARAMETER', status: 400, message: expect.stringMatching(message) });
        // Whole: not even the valid records before the bad field were stored.
        expect(await store.headPosition()).toBe(0);
      });
    }

    it('against what was provisioned before: another customer\'s service, a taken username', async () => {
      await applyProvisioning(store, exampleDoc());
      const head = await store.headPosition();
      const moved = { services: [{ id: 101, name: 'Acme Support', customer: 'globex' }], users: [] };
      await expect(applyProvisioning(store, moved)).rejects.toMatchObject({ message: expect.stringMatching(/services\[0\]\.customer: service 101 belongs to customer "acme"/) });
      const taken = { services: [], users: [{ id: 7, username: 'asha', password: 'pw-seven', services: [101] }] };
      await expect(applyProvisioning(store, taken)).rejects.toMatchObject({ message: expect.stringMatching(/users\[0\]\.username "asha" is taken by another user/) });
      const mixed = {
        services: [{ id: 202, name: 'Globex', customer: 'globex' }],
        users: [{ id: 8, username: 'mixed', password: 'pw-eight', services: [202, 101] }],
      };
      await expect(applyProvisioning(store, mixed)).rejects.toMatchObject({ message: expect.stringMatching(/users\[0\]\.services/) });
      expect(await store.headPosition()).toBe(head);
    });
  });
});
