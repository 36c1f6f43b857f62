// Bundles Studio (src/main.tsx + src/style.css) with esbuild into OUT: index.html and assets/ with content hashes.
//   node build.mjs --out DIR [--node-modules DIR] [--dev]
// --node-modules: where `npm ci` put the packages (the CMake build uses BUILD/web-npm/node_modules).
import { createRequire } from 'node:module';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const out = path.resolve(opt('--out', path.join(here, 'dist')));
const nodeModules = path.resolve(opt('--node-modules', path.join(here, 'node_modules')));
const dev = args.includes('--dev');

const require = createRequire(path.join(nodeModules, 'noop.js'));
const esbuild = require('esbuild');

const assets = path.join(out, 'assets');
rmSync(assets, { recursive: true, force: true });
mkdirSync(assets, { recursive: true });
const result = await esbuild.build({
  entryPoints: [path.join(here, 'src', 'main.tsx')],
  bundle: true,
  minify: !dev,
  sourcemap: dev,
  format: 'esm',
  target: ['es2020'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  nodePaths: [nodeModules],
  outdir: assets,
  entryNames: '[name]-[hash]',
  metafile: true,
  logLevel: 'warning',
  legalComments: 'none',
});
const outputs = Object.keys(result.metafile.outputs).map((f) => path.relative(out, path.resolve(f)));
const js = outputs.find((f) => f.endsWith('.js'));
const css = outputs.find((f) => f.endsWith('.css'));
let html = readFileSync(path.join(here, 'index.html'), 'utf8');
html = html.replace('%SCRIPT%', `/${js}`).replace('%STYLE%', css ? `<link rel="stylesheet" href="/${css}">` : '');
writeFileSync(path.join(out, 'index.html'), html);
let bytes = 0;
for (const o of Object.values(result.metafile.outputs)) bytes += o.bytes;
console.log(`studio: built ${outputs.join(', ')} (${(bytes / 1024).toFixed(1)} KiB) into ${out}`);
