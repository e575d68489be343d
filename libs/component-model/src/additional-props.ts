import { BadRequestError } from '@app/contracts';
import type { ConfigurableProp } from './analyze-component';
import { checkProp, toConfigurable } from './analyze-component';
import type { PropDescriptor } from './descriptor';
import { isInterfaceType } from './prop-types';

function fail(message: string, details: Record<string, unknown>): never {
  throw new BadRequestError(`additionalProps(): ${message}`, details, 'invalid_props');
}

/**
 * Checks the props a source's `additionalProps()` returned (as the sandbox described them) like
 * static ones and returns their `configurable_props`. The sandbox has already merged an app's
 * propDefinition into each prop and left out props named like static ones. Interfaces
 * (`$.interface.*`) are refused: a source's endpoint and schedule are fixed by its component.
 */
export function analyzeAdditionalProps(staticProps: ConfigurableProp[], added: PropDescriptor[]): ConfigurableProp[] {
  const seen = new Set(staticProps.map((p) => p.name));
  const appSlugs = new Set(
    [...staticProps, ...added].filter((p) => p.type === 'app').flatMap((p) => [p.name, ...(typeof p.app === 'string' && p.app ? [p.app] : [])]),
  );
  return added.map((raw) => {
    if (typeof raw.name !== 'string' || raw.name === '') fail('a prop has no name', { field: 'props' });
    if (seen.has(raw.name)) fail(`prop "${raw.name}" is returned twice`, { prop: raw.name });
    seen.add(raw.name);
    const { propDefinition: _merged, ...prop } = raw;
    void _merged;
    if (isInterfaceType(prop.type)) fail(`prop "${prop.name}": ${prop.type} cannot be added by additionalProps(), only declared in props`, { prop: prop.name, type: prop.type });
    try {
      checkProp(prop, false, appSlugs);
    } catch (e) {
      if (e instanceof BadRequestError) fail(e.message, { prop: prop.name });
      throw e;
    }
    return toConfigurable(prop);
  });
}
