import type { PreviousProp } from '../types';
import { isObject } from './plan';

/**
 * Pipedream's `previousPropDefs`: the component's props merged with those `additionalProps()`
 * returned last time. Static definitions are copied one level deep, so a component that edits them
 * in place (`previousPropDefs.x.hidden = true`, a common registry pattern) does not change the
 * loaded module that later calls and runs share (app props stay themselves: `propDefinition`
 * references name them by identity). Props added last time come back as they were
 * stored: their JSON fields (their functions, such as async `options`, were not kept).
 */
export function previousPropDefs(staticProps: Record<string, unknown>, previous: PreviousProp[] = []): Record<string, unknown> {
  const defs: Record<string, unknown> = {};
  for (const [name, def] of Object.entries(staticProps)) defs[name] = isObject(def) && def.type !== 'app' ? { ...def } : def;
  for (const prop of previous) {
    if (!isObject(prop) || typeof prop.name !== 'string' || Object.prototype.hasOwnProperty.call(defs, prop.name)) continue;
    // `remoteOptions` says the options were a method: the method itself is not stored.
    const { name, remoteOptions: _remote, ...def } = prop;
    void _remote;
    defs[name] = def;
  }
  return defs;
}
