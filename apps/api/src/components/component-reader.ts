import type { ComponentDescriptor } from '@app/component-model';

/** Input of an async `options()` call of a prop. */
export interface OptionsInput {
  page: number;
  prevContext?: unknown;
  configuredProps: Record<string, unknown>;
}

export interface OptionsOutput {
  options?: unknown[];
  context?: unknown;
  error?: { name: string; message: string };
}

export interface DescribeOutput {
  descriptor?: ComponentDescriptor;
  error?: { name: string; message: string; stack?: string };
  /** npm packages installed for the component, name → exact version (passed on to the runner). */
  dependencyVersions?: Record<string, string>;
}

/**
 * Reads components by running their code off the api's main thread (in a
 * worker with a timeout, a memory cap and an empty environment).
 */
export interface ComponentReader {
  describe(code: string, timeoutMs: number): Promise<DescribeOutput>;
  options(code: string, propName: string, input: OptionsInput, timeoutMs: number): Promise<OptionsOutput>;
  close(): Promise<void>;
}

export const COMPONENT_READER = Symbol('COMPONENT_READER');
