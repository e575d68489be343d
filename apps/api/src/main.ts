import { loadConfigOrExit, portInUse } from '@app/config';
import { createApiApp } from './bootstrap';

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const app = await createApiApp(config);
  await app.listen(config.port, config.host).catch((e: NodeJS.ErrnoException) => {
    throw e.code === 'EADDRINUSE' ? portInUse(config.port, 'PORT') : e;
  });
  process.stderr.write(`api listening on ${config.host}:${config.port} (${config.publicUrl}/v1)\n`);
}

main().catch((e: Error) => {
  process.stderr.write(`api failed to start: ${e.message}\n`);
  process.exit(1);
});
