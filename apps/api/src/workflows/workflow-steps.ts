import { EntityManager } from '@mikro-orm/postgresql';
import { ADDITIONAL_PROPS_MAX_BYTES, AnalyzedComponent, ConfigurableProp, hidesValue, isTemplated, stepTemplateProblem, validateConfiguredProps } from '@app/component-model';
import type { WorkflowStepDef } from '@app/component-model';
import { AppConfig } from '@app/config';
import { ApiError, BadRequestError, clipped, newId, NotFoundError, PayloadTooLargeError, sha256Hex } from '@app/contracts';
import { Component, WorkflowStepRow } from '@app/db';
import { AuthContext } from '../auth/auth.context';
import { ComponentReader } from '../components/component-reader';
import { ComponentsService, REGISTRY_OWNER, WITHOUT_CODE } from '../components/components.service';
import { addedProps, byStaticProps, hasDynamicProps, sandboxOf } from '../components/dynamic-props';
import { decryptProps, encryptProps, unmaskInput } from '../sources/source-props';

/**
 * Most JSON the props `additionalProps()` added may take in one workflow, all its steps together (4 calls' worth: each
 * may add `ADDITIONAL_PROPS_MAX_BYTES`); they are stored in the workflow's row, read whenever it is.
 */
const WORKFLOW_ADDED_PROPS_MAX_BYTES = 4 * ADDITIONAL_PROPS_MAX_BYTES;

/** What resolving steps needs: the components, their reader (`additionalProps()`), the configuration. */
export interface StepsDeps {
  components: ComponentsService;
  reader: ComponentReader;
  config: AppConfig;
}

/**
 * Turns the steps of a definition into stored steps: a code step's code is
 * a component of the owner (the same code is reused), an action is
 * found by `sc_…` id, by key in the owner's namespace, then in the registry.
 * Either must be an action. An action of the caller's from another namespace
 * (their own, for an org's workflow) is saved again in the owner's, as a
 * source's component is; a deploy may always keep an action a step has. Props are validated as a source's are, except
 * values holding a template (known only at run time); secret props and app
 * `$auth` are encrypted as for sources. Components made for it (`fresh`) are not stored yet: the workflow's
 * own transaction stores them, so a refused definition leaves none behind. Stored components are read
 * `WITHOUT_CODE`: their code is read only to be copied into the owner's namespace or to call `additionalProps()`.
 */
export async function resolveSteps(
  deps: StepsDeps,
  em: EntityManager,
  auth: AuthContext,
  ownerId: string,
  steps: WorkflowStepDef[],
  previous: WorkflowStepRow[] = [],
): Promise<{ rows: WorkflowStepRow[]; components: Component[]; fresh: Component[] }> {
  const { components } = deps;
  const rows: WorkflowStepRow[] = [];
  const used: Component[] = [];
  const fresh: Component[] = [];
  let addedBytes = 0;
  for (const [i, step] of steps.entries()) {
    const component = step.code !== undefined ? await codeComponent(components, em, auth, ownerId, step.code, step.name, i, fresh) : await actionComponent(components, auth, ownerId, step.action as string, i, previous, fresh);
    // A step keeps its cell id across deploys while its name stays (so `$.service.db` and error reports follow it), and its hidden values for a mask sent back.
    const before = previous.find((p) => p.name === step.name);
    const { values, additional } = await stepProps(deps, component, step.props, i, ownerId, before, steps.slice(0, i).map((s) => s.name));
    addedBytes += additional ? Buffer.byteLength(JSON.stringify(additional)) : 0;
    if (addedBytes > WORKFLOW_ADDED_PROPS_MAX_BYTES) {
      const path = `steps[${i}].props`;
      throw new PayloadTooLargeError(`${path}: the props additionalProps() added to the steps so far are ${addedBytes} bytes of JSON together; one workflow's may take at most ${WORKFLOW_ADDED_PROPS_MAX_BYTES}`, { path, bytes: addedBytes, limit_bytes: WORKFLOW_ADDED_PROPS_MAX_BYTES });
    }
    const cellId = before?.cellId ?? newId('cell');
    rows.push({ name: step.name, cellId, componentId: component.id, kind: step.code !== undefined ? 'code' : 'action', ...(step.action ? { action: step.action } : {}), props: values, ...(additional ? { additionalProps: additional } : {}) });
    used.push(component);
  }
  return { rows, components: used, fresh };
}

/**
 * A step's props validated against its component's props, as a source's `configured_props` are (docs/api.md),
 * errors named `steps[i].props.<prop>`: a component with `additionalProps()` has it called in the owner's sandbox
 * with the static values (a template as its text) and the props it added for the step last time, and the values are
 * validated against both. A secret's mask sent back keeps the value the step had while its prop still hides it.
 * Every template must then resolve when the step runs, after `earlierSteps` (`stepTemplateProblem`).
 */
async function stepProps(deps: StepsDeps, component: Component, given: Record<string, unknown>, i: number, ownerId: string, before: WorkflowStepRow | undefined, earlierSteps: string[]): Promise<{ values: Record<string, unknown>; additional?: ConfigurableProp[] }> {
  const { config, reader, components } = deps;
  const props = component.configurableProps as ConfigurableProp[];
  const current = before ? decryptProps(before.props, config.secretsKey) : {};
  const valid = (all: ConfigurableProp[], values: Record<string, unknown>) => validateConfiguredProps(all, values, config, { deferred: isTemplated });
  let all = props;
  let additional: ConfigurableProp[] | undefined;
  let values: Record<string, unknown>;
  let checked: Record<string, unknown>;
  try {
    if (hasDynamicProps(component)) {
      const staticValues = valid(props, byStaticProps(component, unmaskInput(props, given, current)).own);
      const previousDefs = (before?.additionalProps ?? []) as ConfigurableProp[];
      additional = await addedProps(reader, config, await components.withCode(component), staticValues, { previous: previousDefs, account: sandboxOf(component, ownerId) });
      all = [...props, ...additional];
    }
    values = unmaskInput(all, given, current);
    checked = valid(all, values);
  } catch (e) {
    throw e instanceof ApiError ? stepPropsError(e, i, all) : e;
  }
  const hidden = new Set(all.filter(hidesValue).map((p) => p.name));
  const unresolved = stepTemplateProblem(values, i, earlierSteps, (name) => hidden.has(name));
  if (unresolved) throw new BadRequestError(`${unresolved.path}: ${unresolved.problem}`, { path: unresolved.path }, 'invalid_workflow');
  return { values: encryptProps(all, checked, config.secretsKey), ...(additional ? { additional } : {}) };
}

function stepPropsError(e: ApiError, i: number, props: ConfigurableProp[]): ApiError {
  const details = e.details ?? {};
  const unknown = Array.isArray(details.props) ? (details.props as string[]).map(clipped) : undefined;
  // At most 20 of them are listed (validateConfiguredProps), `more` counting the others.
  const more = typeof details.more === 'number' ? details.more : 0;
  // An array element's error names it (`details.path`: `tags[1]`), its prop's own (`details.prop`) the prop.
  const at = typeof details.path === 'string' ? details.path : details.prop;
  const prop = typeof at === 'string' ? clipped(at) : unknown?.[0];
  const path = prop ? `steps[${i}].props.${prop}` : `steps[${i}].props`;
  const message = unknown
    ? `unknown prop${unknown.length + more > 1 ? 's' : ''} ${unknown.join(', ')}${more ? ` and ${more} more` : ''}; the component's props are ${props.map((p) => p.name).join(', ') || '(none)'}`
    : e.message.replace(/^configured_props(\.\S+?:| is)?\s*/, '');
  if (e instanceof PayloadTooLargeError) return new PayloadTooLargeError(`${path}: ${message}`, { ...details, path });
  return new BadRequestError(`${path}: ${message}`, { path, ...(unknown ? { props: unknown, ...(more ? { more } : {}) } : {}) }, 'invalid_workflow');
}

/** A step runs an action: a source (its `$emit`, interfaces and hooks) cannot be a step. */
function assertAction(type: string, i: number, field: 'code' | 'action', what: string): void {
  if (type !== 'action') {
    throw new BadRequestError(`steps[${i}].${field}: ${what} is a ${type}, not an action: a step runs an action component (type: "action")`, { path: `steps[${i}].${field}`, type }, 'invalid_workflow');
  }
}

/** A code step's component: the owner's with this code, one made for an earlier step, or a new one (added to `fresh`). */
async function codeComponent(components: ComponentsService, em: EntityManager, auth: AuthContext, ownerId: string, code: string, name: string, i: number, fresh: Component[]): Promise<Component> {
  const codeHash = sha256Hex(code);
  const existing = fresh.find((c) => c.codeHash === codeHash && c.componentUrl === null) ?? ((await em.fork().findOne(Component, { ownerId, codeHash, componentUrl: null }, { orderBy: { createdAtMs: 'desc' }, ...WITHOUT_CODE })) as Component | null);
  if (existing) {
    assertAction(existing.type, i, 'code', 'this code');
    return existing;
  }
  try {
    const accept = (a: AnalyzedComponent): void => assertAction(a.type, i, 'code', 'this code');
    const made = await components.prepare(ownerId, auth.userId, { code }, { name: `step ${name}`, version: '0.0.0', type: 'action' }, accept);
    fresh.push(made);
    return made;
  } catch (e) {
    if (e instanceof BadRequestError && e.code === 'invalid_workflow') throw e;
    if (e instanceof BadRequestError) throw new BadRequestError(`steps[${i}].code: ${e.message}`, { path: `steps[${i}].code`, ...(e.details ?? {}) }, 'invalid_workflow');
    throw e;
  }
}

async function actionComponent(components: ComponentsService, auth: AuthContext, ownerId: string, action: string, i: number, previous: WorkflowStepRow[], fresh: Component[]): Promise<Component> {
  // A key names the newest version at each deploy; an id a step already runs is kept, whoever deploys.
  const kept = action.startsWith('sc_') ? previous.find((p) => p.kind === 'action' && p.action === action) : undefined;
  let component = kept ? await components.findById(kept.componentId, { code: false }) : await findAction(components, auth, ownerId, action, i);
  assertAction(component.type, i, 'action', clipped(action));
  // Every member who can reach the workflow can read what its steps run, and one who leaves keeps no hold on it.
  if (component.ownerId !== ownerId && component.ownerId !== REGISTRY_OWNER) {
    const whole = await components.withCode(component);
    component = await components.prepare(ownerId, auth.userId, { code: whole.code, url: whole.componentUrl ?? undefined, bundle: whole.bundle ?? undefined });
    fresh.push(component);
  }
  return component;
}

async function findAction(components: ComponentsService, auth: AuthContext, ownerId: string, action: string, i: number): Promise<Component> {
  try {
    return await components.findForCaller(auth, action, ownerId, { code: false });
  } catch (e) {
    if (!(e instanceof NotFoundError) || action.startsWith('sc_')) throw notFound(action, i);
  }
  try {
    return await components.findRegistry(action, { code: false });
  } catch {
    throw notFound(action, i);
  }
}

function notFound(action: string, i: number): BadRequestError {
  return new BadRequestError(`steps[${i}].action: no component ${clipped(action)} (a saved component id sc_…, a key you published, or a registry key)`, { path: `steps[${i}].action`, action: clipped(action) }, 'invalid_workflow');
}
