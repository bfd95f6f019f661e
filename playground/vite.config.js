import { resolve } from 'node:path';
import { defineConfig } from 'vite';

// During development the pages talk to a running vps-graph through this proxy
// (same origin, as when the binary serves them): `VPS_GRAPH_URL=http://127.0.0.1:18080 npx vite`.
const api = process.env.VPS_GRAPH_URL || 'http://127.0.0.1:8080';
const proxy = { '/graphql': { target: api, ws: true, changeOrigin: true } };

export default defineConfig({
  // Relative asset URLs: the page works wherever the server mounts it
  // (`./assets/x.js` from `/` or from `/dashboard` both resolve to `/assets/x.js`).
  base: './',
  // Monaco's workers are ES modules (setup-workers/vite imports them with ?worker).
  worker: { format: 'es' },
  server: { proxy },
  preview: { proxy },
  build: {
    // build.rs points this at $OUT_DIR/playground, which rust-embed bundles.
    outDir: process.env.PLAYGROUND_OUT_DIR || 'dist',
    emptyOutDir: true,
    // Monaco alone is ~3 MB; it is served from the binary, not over the internet.
    chunkSizeWarningLimit: 4096,
    rolldownOptions: {
      // Two pages: GraphiQL at / and the live dashboard at /dashboard. Each gets
      // its own entry chunk, so the dashboard never loads GraphiQL or React.
      input: {
        index: resolve(import.meta.dirname, 'index.html'),
        dashboard: resolve(import.meta.dirname, 'dashboard.html'),
      },
      // Dozens of harmless "use client" notices from React libraries would bury
      // any real warning (build.rs shows only the tail of the output).
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
});
