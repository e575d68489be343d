import { EntityManager } from '@mikro-orm/postgresql';
import { ConfigurableProp } from '@app/component-model';
import type { WorkflowStepDef } from '@app/component-model';
import { BadRequestError, newId, NotFoundError, sha256Hex } from '@app/contracts';
import { Component, WorkflowStepRow } from '@app/db';
import { AuthContext } from '../auth/auth.context';
import { ComponentsService } from '../components/components.service';
import { encryptProps } from '../sources/source-props';

/**
 * Turns the steps of a definition into stored steps: a code step's code is
 * saved as a component of the owner (the same code is reused), an action is
 * found by `sc_…` id, by key in the owner's namespace, then in the registry.
 * Secret props and app `$auth` are encrypted as for sources.
 */
export async function resolveSteps(
  components: ComponentsService,
  em: EntityManager,
  auth: AuthContext,
  ownerId: string,
  steps: WorkflowStepDef[],
  secretsKey: Buffer,
  previous: WorkflowStepRow[] = [],
): Promise<{ rows: WorkflowStepRow[]; components: Component[] }> {
  const rows: WorkflowStepRow[] = [];
  const used: Component[] = [];
  for (const [i, step] of steps.entries()) {
    const component = step.code !== undefined ? await codeComponent(components, em, auth, ownerId, step.code, step.name, i) : await actionComponent(components, auth, ownerId, step.action as string, i);
    const props = component.configurableProps as ConfigurableProp[];
    let values: Record<string, unknown>;
    try {
      values = encryptProps(props, step.props, secretsKey);
    } catch (e) {
      throw new BadRequestError(`steps[${i}].props: ${(e as Error).message}`, { path: `steps[${i}].props` }, 'invalid_workflow');
    }
    // A step keeps its cell id across deploys while its name stays (so `$.service.db` and error reports follow it).
    const cellId = previous.find((p) => p.name === step.name)?.cellId ?? newId('cell');
    rows.push({ name: step.name, cellId, componentId: component.id, kind: step.code !== undefined ? 'code' : 'action', ...(step.action ? { action: step.action } : {}), props: values });
    used.push(component);
  }
  return { rows, components: used };
}

async function codeComponent(components: ComponentsService, em: EntityManager, auth: AuthContext, ownerId: string, code: string, name: string, i: number): Promise<Component> {
  const existing = await em.findOne(Component, { ownerId, codeHash: sha256Hex(code), componentUrl: null }, { orderBy: { createdAtMs: 'desc' } });
  if (existing) return existing;
  try {
    return await components.save(ownerId, auth.userId, { code }, em.fork(), { name: `step ${name}`, version: '0.0.0', type: 'action' });
  } catch (e) {
    if (e instanceof BadRequestError) throw new BadRequestError(`steps[${i}].code: ${e.message}`, { path: `steps[${i}].code`, ...(e.details ?? {}) }, 'invalid_workflow');
    throw e;
  }
}

async function actionComponent(components: ComponentsService, auth: AuthContext, ownerId: string, action: string, i: number): Promise<Component> {
  try {
    return await components.findForCaller(auth, action, ownerId);
  } catch (e) {
    if (!(e instanceof NotFoundError) || action.startsWith('sc_')) throw notFound(action, i);
  }
  try {
    return await components.findRegistry(action);
  } catch {
    throw notFound(action, i);
  }
}

function notFound(action: string, i: number): BadRequestError {
  return new BadRequestError(`steps[${i}].action: no component ${action} (a saved component id sc_…, a key you published, or a registry key)`, { path: `steps[${i}].action`, action }, 'invalid_workflow');
}
