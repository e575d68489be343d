/** The prop types a component may declare, and how each one behaves. */

export const INTERFACE_HTTP = '$.interface.http';
export const INTERFACE_TIMER = '$.interface.timer';
export const SERVICE_DB = '$.service.db';
/** Events of an app's managed webhook, fed through the API (`POST /v1/apps/{app}/hook_events`). */
export const INTERFACE_APPHOOK = '$.interface.apphook';

/** Types that hold a user value (validated in `configured_props`). */
export const VALUE_TYPES = ['boolean', 'integer', 'string', 'object', 'any', 'json', 'sql', 'http_request', 'string[]', 'integer[]', 'boolean[]'] as const;

/** Every type we accept in a component. */
/** A directory of Pipedream's File Stash: accepted (no value); its methods throw in the sandbox, see docs/sandbox.md. */
export const DIR = 'dir';

export const KNOWN_TYPES: readonly string[] = [...VALUE_TYPES, 'app', 'alert', INTERFACE_HTTP, INTERFACE_TIMER, INTERFACE_APPHOOK, SERVICE_DB, DIR];

/** Types that exist on the platform we mirror but that this service does not run. */
export const UNSUPPORTED_TYPES: Record<string, string> = {
  '$.service.dir': 'the $.service.dir service is not supported by this service',
  'data_store': 'data stores are not supported by this service; use $.service.db',
};

/**
 * App-specific prop types of real components (`$.airtable.baseId`, `$.airtable.table`,
 * `$.discord.channel[]`): a value picked from the app's account, stored like any
 * other value. Returns the app slug, or undefined for any other type.
 */
export function appSpecificTypeApp(type: string): string | undefined {
  const m = /^\$\.([a-z0-9_]+)\.[A-Za-z0-9_]+(\[\])?$/.exec(type);
  if (!m || m[1] === 'interface' || m[1] === 'service') return undefined;
  return m[1];
}

export const DEDUPE_STRATEGIES = ['unique', 'greatest', 'last'] as const;
export type DedupeStrategy = (typeof DEDUPE_STRATEGIES)[number];

export const HOOK_NAMES = ['deploy', 'activate', 'deactivate'] as const;

export function isInterfaceType(type: string): boolean {
  return type.startsWith('$.interface.');
}

/** Props whose value the service provides (no user value). */
export function isSystemType(type: string): boolean {
  return type === INTERFACE_HTTP || type === SERVICE_DB || type === INTERFACE_APPHOOK || type === DIR || type === 'alert';
}

export function isArrayType(type: string): boolean {
  return type.endsWith('[]');
}

/**
 * Names every JavaScript object already has (`__proto__`, `constructor`, `toString`…): a prop named so
 * would read the inherited member where no value is given, and `__proto__` cannot be a value of `this`.
 */
const RESERVED_PROP_NAMES = new Set(Object.getOwnPropertyNames(Object.prototype));

export function isReservedPropName(name: string): boolean {
  return RESERVED_PROP_NAMES.has(name);
}

/** Types whose value the service provides and that only `props` may declare (not `additionalProps()`). */
export function isServiceType(type: string): boolean {
  return isInterfaceType(type) || type.startsWith('$.service.') || type === DIR;
}
