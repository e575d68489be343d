import { Controller, Get, Inject } from '@nestjs/common';
import { COMPONENT_READER, ComponentReader } from './components/component-reader';
import { Public } from './auth/api-key.guard';
import { ComponentGc, GcStats } from './components/component-gc';
import { RegistrySeeder, RegistryStatus } from './components/registry.seeder';
import { IngestStats, InvocationBacklog } from './http-endpoints/invocation-backlog';

export interface HealthDto {
  status: 'ok';
  /** The shipped registry: `seeding` in the background after start, then `ready` (`off` when REGISTRY_DIR=off, `failed` if the seed itself failed). */
  registry: RegistryStatus;
  /** Component code garbage collection on this replica (rounds it ran, objects it removed). */
  component_gc: GcStats;
  /** How component code is isolated: `namespaces` (one sandbox process per account) or `none` (SANDBOX_ISOLATION=none). */
  isolation: string;
  /** Back-pressure of HTTP ingress: invocations waiting in INVOCATIONS (as last read), its bounds, requests this replica refused with 429. */
  ingest: IngestStats;
}

@Controller()
export class HealthController {
  constructor(
    private readonly seeder: RegistrySeeder,
    private readonly gc: ComponentGc,
    private readonly backlog: InvocationBacklog,
    @Inject(COMPONENT_READER) private readonly reader: ComponentReader,
  ) {}

  /** Always 200 while the process serves HTTP; the details say what is still starting. */
  @Public()
  @Get('healthz')
  health(): HealthDto {
    return { status: 'ok', registry: this.seeder.status, component_gc: this.gc.stats, isolation: this.reader.isolation?.mode ?? 'none', ingest: this.backlog.stats };
  }
}
