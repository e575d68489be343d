import { Module } from '@nestjs/common';
import { EndpointLookup } from './endpoint-lookup';
import { HttpIngress } from './http-ingress';
import { IngestBatches } from './ingest-batches';
import { InvocationBacklog } from './invocation-backlog';
import { ManualRunController } from './manual-run.controller';

/** The HTTP interface of sources (`/e/<endpoint_key>`) and the manual run endpoint. */
@Module({
  controllers: [ManualRunController],
  providers: [EndpointLookup, HttpIngress, IngestBatches, InvocationBacklog],
  exports: [InvocationBacklog, HttpIngress],
})
export class HttpEndpointsModule {}
