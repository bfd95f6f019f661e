import { defineConfig } from 'vite';

export default defineConfig({
  // Relative asset URLs: the page works wherever the server mounts it.
  base: './',
  // Monaco's workers are ES modules (setup-workers/vite imports them with ?worker).
  worker: { format: 'es' },
  build: {
    // build.rs points this at $OUT_DIR/playground, which rust-embed bundles.
    outDir: process.env.PLAYGROUND_OUT_DIR || 'dist',
    emptyOutDir: true,
    // Monaco alone is ~3 MB; it is served from the binary, not over the internet.
    chunkSizeWarningLimit: 4096,
    rolldownOptions: {
      // Dozens of harmless "use client" notices from React libraries would bury
      // any real warning (build.rs shows only the tail of the output).
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
});
