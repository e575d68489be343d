import { EntityManager } from '@mikro-orm/postgresql';
import { analyzeAdditionalProps, ComponentMeta, ConfigurableProp, hidesValue, validateConfiguredProps } from '@app/component-model';
import { AppConfig } from '@app/config';
import { BadRequestError, REDACT_MIN_CHARS, redactionPatterns, redactThenCut, stringsOf } from '@app/contracts';
import { Component, Source } from '@app/db';
import { assertAccess, AuthContext } from '../auth/auth.context';
import { decryptProps, unmaskInput } from '../sources/source-props';
import { ComponentReader } from './component-reader';
import { REGISTRY_OWNER, runnableOf } from './components.service';

/** Longest message of a failed `additionalProps()` or `options()` shown in the 400 (the sandbox already cuts it there, adding "…"). */
const ERROR_MESSAGE_MAX_CHARS = 2000;
/** Longest error name shown (the sandbox cuts it there too). */
const ERROR_NAME_MAX_CHARS = 100;

/** True when the component has `additionalProps()` (its sources' props depend on their values). */
export function hasDynamicProps(component: Component): boolean {
  return (component.meta as unknown as ComponentMeta).additionalProps === true;
}

/**
 * Values split by the component's own (static) props: `own` names one of them, `other` the rest (props a
 * component with `additionalProps()` may add, checked once they are added).
 */
export function byStaticProps(component: Component, given: Record<string, unknown>): { own: Record<string, unknown>; other: Record<string, unknown> } {
  const names = new Set((component.configurableProps as ConfigurableProp[]).map((p) => p.name));
  const own: Record<string, unknown> = {};
  const other: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(given)) (names.has(k) ? own : other)[k] = v;
  return { own, other };
}

/**
 * Where `additionalProps(previousPropDefs)` starts from: the props it added for a source last time
 * (`sources.additional_props`; none on a first deploy) and the account whose sandbox calls it.
 */
export interface PropsBase {
  previous: ConfigurableProp[];
  account: string;
}

/** A reload's base: also the source's values (plain; none on a first deploy), which a secret's mask sent back stands for. */
export interface ReloadBase extends PropsBase {
  stored: Record<string, unknown>;
}

/**
 * The props `additionalProps()` returns for `staticValues` (validated values of the component's own
 * props), called in the base's account's sandbox with the static definitions and the base's previous
 * props as `previousPropDefs`, and checked like static props.
 */
export async function addedProps(reader: ComponentReader, config: AppConfig, component: Component, staticValues: Record<string, unknown>, base: PropsBase): Promise<ConfigurableProp[]> {
  // A component read `WITHOUT_CODE` would hand the sandbox no code: its callers read it `withCode`.
  if (typeof component.code !== 'string') throw new Error(`additionalProps() of component ${component.id}: read without its code`);
  const out = await reader.additionalProps(runnableOf(component).code, staticValues, config.componentReadTimeoutMs, base.account, base.previous);
  if (out.error) {
    const props = component.configurableProps as ConfigurableProp[];
    const message = hiddenIn(props, staticValues, String(out.error.message));
    throw new BadRequestError(`additionalProps() failed: ${message}`, { reason: hiddenIn(props, staticValues, String(out.error.name), ERROR_NAME_MAX_CHARS) }, 'additional_props_failed');
  }
  return analyzeAdditionalProps(component.configurableProps as ConfigurableProp[], Array.isArray(out.props) ? out.props : []);
}

/**
 * `text` (what code said, an error) with the values of the secret props and app `$auth` among `values` as
 * `**********`, as a run's record hides them, then cut to `maxChars`: code that quotes one in an error does not
 * show it to the caller, who may have sent only its mask, nor the start of one the cut went through.
 */
export function hiddenIn(props: ConfigurableProp[], values: Record<string, unknown>, text: string, maxChars = ERROR_MESSAGE_MAX_CHARS): string {
  const hidden: string[] = [];
  for (const p of props) if (hidesValue(p)) stringsOf(values[p.name], hidden);
  return redactThenCut(text, redactionPatterns(hidden.filter((s) => s.length >= REDACT_MIN_CHARS)), maxChars);
}

/**
 * Pipedream's "reload props" for a form being filled in: values given so far (required props may
 * be missing; each given one is checked, defaults apply; a secret's mask stands for the base's stored value, as
 * on an update) → the component's props followed by those `additionalProps()` returns for them.
 */
export async function reloadProps(reader: ComponentReader, config: AppConfig, component: Component, given: Record<string, unknown>, base: ReloadBase): Promise<ConfigurableProp[]> {
  const props = component.configurableProps as ConfigurableProp[];
  const dynamic = hasDynamicProps(component);
  const partial = props.map((p) => ({ ...p, optional: true }));
  const unmasked = unmaskInput(props, given, base.stored);
  // A value for a prop `additionalProps()` may add is checked once it is added (deploy, update); a component
  // without `additionalProps()` has no other props, so an unknown name is refused as its deploy would refuse it.
  const values = validateConfiguredProps(partial, dynamic ? byStaticProps(component, unmasked).own : unmasked, config);
  if (!dynamic) return props;
  return [...props, ...(await addedProps(reader, config, component, values, base))];
}

/**
 * The account whose sandbox runs `component`'s code in the api (its `options()`, its `additionalProps()`): the
 * account that owns the code — a user's or an org's component runs in its owner's sandbox whoever calls it —
 * or, for a registry component (the operator's code, owned by no account), `caller`'s. An account's sandbox
 * process holds only code of that account and the registry's: code one member wrote in an org never runs
 * beside another member's own components (a global it leaves behind would see their later calls), and a
 * member's own code never runs in the org's sandbox (it would outlive the member's removal from the org,
 * which restarts only the org's sandbox processes).
 */
export function sandboxOf(component: Component, caller: string): string {
  return component.ownerId === REGISTRY_OWNER ? caller : component.ownerId;
}

/**
 * The base of a reload: with `sourceId` (a source the caller can reach, else 404), the props its
 * `additionalProps()` added last time and its values, which is what an update of that source starts from; without,
 * none (a first deploy). The code runs in the sandbox `sandboxOf` names: the component's owner's, or for a registry
 * component the source owner's (with `sourceId`) or `namespace`'s.
 */
export async function propsBaseOf(em: EntityManager, auth: AuthContext, component: Component, namespace: string, sourceId: string | undefined, secretsKey: Buffer): Promise<ReloadBase> {
  if (sourceId === undefined) return { previous: [], account: sandboxOf(component, namespace), stored: {} };
  const source = assertAccess(auth, await em.fork().findOne(Source, { id: sourceId, deletedAt: null }), 'source', sourceId);
  const previous = (source.additionalProps ?? []) as unknown as ConfigurableProp[];
  return { previous, account: sandboxOf(component, source.ownerId), stored: decryptProps(source.configuredProps, secretsKey) };
}
