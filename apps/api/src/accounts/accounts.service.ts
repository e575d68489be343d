import { randomBytes } from 'node:crypto';
import { EntityManager, UniqueConstraintViolationException } from '@mikro-orm/postgresql';
import { BadRequestError, ConflictError, newId, NotFoundError, sha256Hex } from '@app/contracts';
import { ApiKey, notifyAccessChanged, Org, OrgMember, Plan, UsageDaily, User } from '@app/db';

/** Revokes every key of the user still valid; how many. */
const revokeAll = (em: EntityManager, userId: string): Promise<number> => em.nativeUpdate(ApiKey, { userId, revokedAt: null }, { revokedAt: Math.floor(Date.now() / 1000) });

/** Account operations shared by the admin CLI and the api. */
export class AccountsService {
  constructor(private readonly em: EntityManager) {}

  /** 32 random bytes, shown once; only the SHA-256 is stored. */
  private async issueKey(userId: string, em: EntityManager = this.em): Promise<string> {
    const key = 'pd_' + randomBytes(32).toString('base64url');
    em.persist(Object.assign(new ApiKey(), { id: newId('apiKey'), userId, keyHash: sha256Hex(key) }));
    await em.flush();
    return key;
  }

  /**
   * Runs `change` to the user's keys in a transaction holding the user's row: two rotations at once (or a rotation and
   * a revocation) take turns, so the revocation of one always sees the key the other issued and one key at most stays.
   */
  private async withKeysOf<T>(userId: string, change: (tx: EntityManager) => Promise<T>): Promise<T> {
    return this.em.transactional(async (tx) => {
      const [row] = (await tx.execute(`select id from users where id = ? for update`, [userId])) as { id: string }[];
      if (!row) throw new NotFoundError(`user ${userId} not found`);
      return change(tx);
    });
  }

  async createUser(input: { username: string; email: string; plan?: string }): Promise<{ user: User; apiKey: string }> {
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(input.username ?? '')) throw new BadRequestError('username must be 1-64 letters, digits, ".", "_" or "-"');
    assertEmail(input.email);
    const plan = parsePlan(input.plan ?? 'free');
    const taken = new ConflictError(`username ${input.username} is taken`);
    if (await this.em.findOne(User, { username: input.username })) throw taken;
    const user = Object.assign(new User(), { id: newId('user'), username: input.username, email: input.email, plan });
    this.em.persist(user);
    const apiKey = await this.issueKey(user.id).catch(orConflict(taken));
    return { user, apiKey };
  }

  /** Revokes every key of the user and issues a new one. */
  async rotateKey(userId: string): Promise<string> {
    const key = await this.withKeysOf(userId, async (tx) => {
      await revokeAll(tx, userId);
      return this.issueKey(userId, tx);
    });
    await notifyAccessChanged(this.em, await this.reachedBy(userId));
    return key;
  }

  /** Revokes every key of the user and issues none: the user is locked out until a `rotateKey`. Returns how many were revoked. */
  async revokeKeys(userId: string): Promise<number> {
    const revoked = await this.withKeysOf(userId, (tx) => revokeAll(tx, userId));
    if (revoked > 0) await notifyAccessChanged(this.em, await this.reachedBy(userId));
    return revoked;
  }

  async setPlan(userId: string, plan: string): Promise<User> {
    const user = await this.getUser(userId);
    user.plan = parsePlan(plan);
    await this.em.flush();
    await notifyAccessChanged(this.em);
    return user;
  }

  async createOrg(input: { name: string; orgname: string; email?: string }): Promise<Org> {
    if (!input.name || input.name.length > 255 || /[\u0000-\u001f\u007f]/.test(input.name)) throw new BadRequestError('name must be 1-255 characters, without control characters');
    if (input.email !== undefined) assertEmail(input.email);
    if (!/^[a-z0-9][a-z0-9-]{0,63}$/.test(input.orgname ?? '')) throw new BadRequestError('orgname must be 1-64 lowercase letters, digits or "-"');
    const taken = new ConflictError(`orgname ${input.orgname} is taken`);
    if (await this.em.findOne(Org, { orgname: input.orgname })) throw taken;
    const org = Object.assign(new Org(), { id: newId('org'), name: input.name, orgname: input.orgname, email: input.email ?? '' });
    await this.em.persist(org).flush().catch(orConflict(taken));
    return org;
  }

  async addMember(orgId: string, userId: string): Promise<OrgMember> {
    if (!(await this.em.findOne(Org, { id: orgId }))) throw new NotFoundError(`org ${orgId} not found`);
    await this.getUser(userId);
    const existing = await this.em.findOne(OrgMember, { orgId, userId });
    if (existing) return existing;
    const member = Object.assign(new OrgMember(), { orgId, userId });
    try {
      await this.em.persist(member).flush();
    } catch (e) {
      // Added at the same moment by another command: a member already, as when it came first.
      if (!(e instanceof UniqueConstraintViolationException)) throw e;
      return member;
    }
    await notifyAccessChanged(this.em);
    return member;
  }

  /** Ends a membership; the member's next request no longer reaches the org (404). Its sources stay with the org. */
  async removeMember(orgId: string, userId: string): Promise<{ removed: boolean }> {
    if (!(await this.em.findOne(Org, { id: orgId }))) throw new NotFoundError(`org ${orgId} not found`);
    await this.getUser(userId);
    const removed = await this.em.nativeDelete(OrgMember, { orgId, userId });
    if (removed > 0) await notifyAccessChanged(this.em, [orgId]);
    return { removed: removed > 0 };
  }

  /**
   * The accounts a user's keys reach (the user's own and every org's): after a revocation, code that whoever held a
   * key left running in their sandbox processes must not see their later runs (docs/sandbox.md, "Access changes").
   */
  private async reachedBy(userId: string): Promise<string[]> {
    const memberships = await this.em.find(OrgMember, { userId });
    return [userId, ...memberships.map((m) => m.orgId)];
  }

  async getUser(userId: string): Promise<User> {
    const user = await this.em.findOne(User, { id: userId });
    if (!user) throw new NotFoundError(`user ${userId} not found`);
    return user;
  }

  async orgsOf(userId: string): Promise<Org[]> {
    const memberships = await this.em.find(OrgMember, { userId });
    if (!memberships.length) return [];
    return this.em.find(Org, { id: { $in: memberships.map((m) => m.orgId) } }, { orderBy: { createdAt: 'asc' } });
  }

  /** Usage rows of an owner for UTC days in [fromDay, toDay]. */
  async usage(ownerId: string, fromDay: string, toDay: string): Promise<{ invocations: number; computeMs: number }> {
    const rows = await this.em.find(UsageDaily, { ownerId, day: { $gte: fromDay, $lte: toDay } });
    return rows.reduce((acc, r) => ({ invocations: acc.invocations + r.invocations, computeMs: acc.computeMs + r.computeMs }), { invocations: 0, computeMs: 0 });
  }

  /** Each UTC day in [fromDay, toDay] with an owner's usage, oldest first; a day without a row counts zero. */
  async usagePerDay(ownerId: string, fromDay: string, toDay: string): Promise<{ day: string; invocations: number; computeMs: number }[]> {
    const rows = await this.em.find(UsageDaily, { ownerId, day: { $gte: fromDay, $lte: toDay } });
    const byDay = new Map(rows.map((r) => [r.day, r]));
    return daysBetween(fromDay, toDay).map((day) => ({ day, invocations: byDay.get(day)?.invocations ?? 0, computeMs: byDay.get(day)?.computeMs ?? 0 }));
  }
}

/** The UTC dates from `fromDay` to `toDay` (both `YYYY-MM-DD`, inclusive). */
export function daysBetween(fromDay: string, toDay: string): string[] {
  const out: string[] = [];
  const end = Date.parse(`${toDay}T00:00:00Z`);
  for (let t = Date.parse(`${fromDay}T00:00:00Z`); t <= end; t += 86_400_000) out.push(utcDay(new Date(t)));
  return out;
}

function parsePlan(plan: string): Plan {
  if (plan !== 'free' && plan !== 'paid') throw new BadRequestError(`plan must be free or paid, got "${plan}"`);
  return plan;
}

/** `YYYY-MM-DD` of a UTC date. */
export function utcDay(d: Date): string {
  return d.toISOString().slice(0, 10);
}

/** An email address as accounts store it: one `@`, no spaces or control characters, at most 255 characters. */
function assertEmail(email: string | undefined): void {
  if (!/^[^@\s\u0000-\u001f\u007f]+@[^@\s\u0000-\u001f\u007f]+$/.test(email ?? '') || email!.length > 255) throw new BadRequestError('email must be an email address of at most 255 characters');
}

/**
 * The check before an insert does not see a row another command inserts at the same moment: the unique constraint
 * does, and that race answers as the check would have (not with the driver's error).
 */
function orConflict(conflict: ConflictError): (e: unknown) => never {
  return (e) => {
    throw e instanceof UniqueConstraintViolationException ? conflict : e;
  };
}
