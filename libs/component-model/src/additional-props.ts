import { BadRequestError, hasLoneSurrogate } from '@app/contracts';
import type { ConfigurableProp } from './analyze-component';
import { checkProp, toConfigurable } from './analyze-component';
import type { PropDescriptor } from './descriptor';
import { ADDITIONAL_PROPS_MAX_BYTES, ADDITIONAL_PROPS_MAX_COUNT } from './form-limits';
import { INTERFACE_TIMER, isServiceType } from './prop-types';

function fail(message: string, details: Record<string, unknown>): never {
  throw new BadRequestError(`additionalProps(): ${message}`, details, 'invalid_props');
}

/** The size limits, checked where the props are described (the sandbox) and again here; a breach is the component's failure. */
function checkSize(added: PropDescriptor[]): void {
  if (added.length > ADDITIONAL_PROPS_MAX_COUNT) {
    throw new BadRequestError(`additionalProps() failed: it returned ${added.length} props; at most ${ADDITIONAL_PROPS_MAX_COUNT} may be added`, { limit: ADDITIONAL_PROPS_MAX_COUNT }, 'additional_props_failed');
  }
  let nul: string | undefined;
  let lone = false;
  let json: string;
  try {
    json = JSON.stringify(added, (key: string, value: unknown) => {
      if (nul === undefined && (key.includes('\u0000') || (typeof value === 'string' && value.includes('\u0000')))) nul = key;
      if (hasLoneSurrogate(key) || (typeof value === 'string' && hasLoneSurrogate(value))) lone = true;
      return value;
    });
  } catch {
    throw new BadRequestError('additionalProps() failed: the props it returned are not JSON', {}, 'additional_props_failed');
  }
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > ADDITIONAL_PROPS_MAX_BYTES) {
    throw new BadRequestError(`additionalProps() failed: the props it returned are ${bytes} bytes of JSON; at most ${ADDITIONAL_PROPS_MAX_BYTES} may be added`, { limit_bytes: ADDITIONAL_PROPS_MAX_BYTES }, 'additional_props_failed');
  }
  // Postgres text and jsonb cannot hold NUL.
  if (nul !== undefined) fail('a returned prop contains a NUL character (\\u0000) in its name or a field', { reason: 'nul_character' });
  // Nor jsonb a lone UTF-16 surrogate: the source's insert failed (500).
  if (lone) fail('a returned prop contains a lone UTF-16 surrogate (one half of a pair, \\ud800–\\udfff, alone) in its name or a field', { reason: 'lone_surrogate' });
}

/**
 * Checks the props a source's `additionalProps()` returned (as the sandbox described them) like
 * static ones and returns their `configurable_props`. The sandbox has already merged an app's
 * propDefinition into each prop and left out props named like static ones. A source's schedule may be
 * added: one `$.interface.timer` when the component declares none (Trello's card-due-date-reminder
 * polls only once a reminder time is chosen). Other interfaces (`$.interface.http`, `apphook`) and
 * services (`$.service.db`, `dir`) are refused: a source's endpoint and storage are fixed by its component.
 */
export function analyzeAdditionalProps(staticProps: ConfigurableProp[], added: PropDescriptor[]): ConfigurableProp[] {
  checkSize(added);
  const seen = new Set(staticProps.map((p) => p.name));
  const appSlugs = new Set(
    [...staticProps, ...added].filter((p) => p.type === 'app').flatMap((p) => [p.name, ...(typeof p.app === 'string' && p.app ? [p.app] : [])]),
  );
  const hasStaticTimer = staticProps.some((p) => p.type === INTERFACE_TIMER);
  let timers = 0;
  return added.map((raw) => {
    if (typeof raw.name !== 'string' || raw.name === '') fail('a prop has no name', { field: 'props' });
    if (seen.has(raw.name)) fail(`prop "${raw.name}" is returned twice`, { prop: raw.name });
    seen.add(raw.name);
    const { propDefinition: _merged, ...prop } = raw;
    void _merged;
    // The one schedule of a component that declares none is checked like a static timer below.
    if (prop.type === INTERFACE_TIMER && (timers++ > 0 || hasStaticTimer)) {
      fail(`prop "${prop.name}": a source has one schedule; additionalProps() may add a $.interface.timer only to a component that declares none, and only one`, { prop: prop.name, type: prop.type });
    }
    if (typeof prop.type === 'string' && isServiceType(prop.type) && prop.type !== INTERFACE_TIMER) {
      fail(`prop "${prop.name}": ${prop.type} cannot be added by additionalProps(), only declared in props`, { prop: prop.name, type: prop.type });
    }
    try {
      checkProp(prop, false, appSlugs);
    } catch (e) {
      if (e instanceof BadRequestError) fail(e.message, { prop: prop.name });
      throw e;
    }
    return toConfigurable(prop);
  });
}

/** The name of the `$.interface.timer` prop among those `additionalProps()` added for a source (stored with it), if any. */
export function addedTimerProp(additional: unknown): string | undefined {
  if (!Array.isArray(additional)) return undefined;
  const timer = (additional as { name?: unknown; type?: unknown }[]).find((p) => p?.type === INTERFACE_TIMER && typeof p.name === 'string');
  return timer?.name as string | undefined;
}
