import type { ComponentDescriptor, ConfigurableProp, PropDescriptor } from '@app/component-model';

/** Input of an async `options()` call of a prop. */
export interface OptionsInput {
  page: number;
  prevContext?: unknown;
  configuredProps: Record<string, unknown>;
  /** The props `additionalProps()` added last time (a source's stored ones), for a prop it adds. */
  previousProps?: ConfigurableProp[];
}

export interface OptionsOutput {
  options?: unknown[];
  context?: unknown;
  error?: { name: string; message: string };
}

export interface AdditionalPropsOutput {
  props?: PropDescriptor[];
  error?: { name: string; message: string };
}

export interface DescribeOutput {
  descriptor?: ComponentDescriptor;
  /** `InstallRefusedError` (the account's NPM_INSTALLS_PER_DAY_PER_ACCOUNT) carries when to retry. */
  error?: { name: string; message: string; stack?: string; retryAfterSeconds?: number };
  /** npm packages installed for the component, name → exact version (passed on to the runner). */
  dependencyVersions?: Record<string, string>;
}

/**
 * Reads components by running their code outside the api's process (in the
 * account's sandbox, with a timeout, a memory cap and an empty environment).
 * A read made for a `/v1` request whose client goes away before the answer is
 * cancelled (clientGoneSignal): it never starts, or its sandbox process is stopped.
 */
export interface ComponentReader {
  /** Reads a component in `account`'s sandbox. */
  describe(code: string, timeoutMs: number, account: string): Promise<DescribeOutput>;
  /** Calls a prop's `options()` in `account`'s sandbox (the component's owner's, or the caller's for a registry component: see `sandboxOf`). */
  options(code: string, propName: string, input: OptionsInput, timeoutMs: number, account: string): Promise<OptionsOutput>;
  /**
   * Calls the component's `additionalProps(previousPropDefs)` in `account`'s sandbox, `this` holding the
   * static props' values; `previousProps` (the props it added last time) follow the static ones in `previousPropDefs`.
   */
  additionalProps(code: string, configuredProps: Record<string, unknown>, timeoutMs: number, account: string, previousProps?: ConfigurableProp[]): Promise<AdditionalPropsOutput>;
  /** How component code is isolated (for the start line and /healthz). */
  readonly isolation?: { mode: string; summary: string };
  /** The api is shutting down: reads not started yet fail (503) instead of starting, and running ones are cancelled (503). */
  refuseReads(): void;
  /** Restarts these accounts' sandbox processes: their access changed. */
  restartSandboxes(accounts: readonly string[]): void;
  /** Retires these accounts' sandbox processes (a source or workflow of theirs was deleted): they take no new read and stop. */
  retireSandboxes(accounts: readonly string[]): void;
  close(): Promise<void>;
}

export const COMPONENT_READER = Symbol('COMPONENT_READER');
