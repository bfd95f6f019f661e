import { resolve } from 'node:path';
import { defineConfig } from 'vite';

// During development the pages talk to a running vps-graph through this proxy
// (same origin, as when the binary serves them): `VPS_GRAPH_URL=http://127.0.0.1:18080 npx vite`.
const api = process.env.VPS_GRAPH_URL || 'http://127.0.0.1:8080';
const proxy = { '/graphql': { target: api, ws: true, changeOrigin: true } };

// GraphiQL imports its editor, Monaco (most of the page's script), only once its own module has
// run. A preload of Monaco's chunks, their imports and their styles in the GraphiQL page lets the
// browser fetch them while it still parses GraphiQL.
function preloadEditor() {
  return {
    name: 'preload-editor',
    transformIndexHtml: {
      order: 'post',
      handler(_html, ctx) {
        if (!ctx.bundle || !ctx.filename.endsWith('index.html')) return [];
        const chunks = Object.values(ctx.bundle).filter((c) => c.type === 'chunk');
        const byFile = new Map(chunks.map((c) => [c.fileName, c]));
        const scripts = new Set();
        const styles = new Set();
        const visit = (chunk) => {
          if (!chunk || scripts.has(chunk.fileName)) return;
          scripts.add(chunk.fileName);
          for (const css of chunk.viteMetadata?.importedCss ?? []) styles.add(css);
          for (const file of chunk.imports) visit(byFile.get(file));
        };
        // What the page loads already: its entry, that entry's imports and styles.
        const entry = chunks.find((c) => c.isEntry && ctx.filename.endsWith(`${c.name}.html`));
        visit(entry);
        const loaded = new Set([...scripts, ...styles]);
        for (const chunk of chunks) if (/^assets\/monaco-editor-/.test(chunk.fileName)) visit(chunk);
        const link = (attrs) => ({ tag: 'link', attrs: { ...attrs, crossorigin: true }, injectTo: 'head' });
        const fresh = (files) => [...files].filter((f) => !loaded.has(f)).map((f) => `./${f}`);
        return [
          ...fresh(scripts).map((href) => link({ rel: 'modulepreload', href })),
          ...fresh(styles).map((href) => link({ rel: 'preload', as: 'style', href })),
        ];
      },
    },
  };
}

export default defineConfig({
  plugins: [preloadEditor()],
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
