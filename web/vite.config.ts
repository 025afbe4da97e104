// The console is embedded in the pagoda binary (cmake/EmbedConsole.cmake):
// everything under dist/assets/ is content-hashed and served as immutable,
// nothing is inlined (the Content-Security-Policy allows no inline script or
// style), and no module is loaded from another origin.
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    cssCodeSplit: false,
    target: 'es2022',
    reportCompressedSize: true,
  },
});
