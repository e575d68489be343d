// Builds the dashboard into dist/web; the api serves it under /ui/ (apps/api/src/web/web-ui.ts).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: here,
  base: '/ui/',
  publicDir: 'public',
  build: {
    outDir: fileURLToPath(new URL('../../dist/web', import.meta.url)),
    emptyOutDir: true,
    // The api's content security policy allows no inline script: never inline the module preload helper.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: true,
  },
  // `npm run dev:web`: the dev server proxies the API of a running `npm start`.
  server: {
    proxy: {
      '/v1': 'http://127.0.0.1:3000',
      '/sse': 'http://127.0.0.1:3000',
      '/e': 'http://127.0.0.1:3000',
    },
  },
});
