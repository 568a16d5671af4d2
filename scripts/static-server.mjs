#!/usr/bin/env node
// A plain static HTTP server for a built FlashScope, the way a course page or GitHub Pages
// serves it: files only, under a sub-path, no rewrites. Listens on loopback only.
//   node scripts/static-server.mjs <dir> <base-path> <port>
import { createServer } from 'node:http';
import { createReadStream, statSync } from 'node:fs';
import { extname, join, resolve, sep } from 'node:path';

const [dirArg = 'dist', baseArg = '/', portArg = '4180'] = process.argv.slice(2);
const root = resolve(dirArg);
const base = baseArg.endsWith('/') ? baseArg : `${baseArg}/`;
const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.map': 'application/json',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.ttf': 'font/ttf',
  '.wasm': 'application/wasm',
  '.png': 'image/png',
};

const server = createServer((req, res) => {
  const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
  if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405).end();
  if (!path.startsWith(base)) return void res.writeHead(404).end('not under the base path');
  let file = resolve(join(root, path.slice(base.length)));
  // Nothing outside the build folder is ever served.
  if (file !== root && !file.startsWith(root + sep)) return void res.writeHead(403).end();
  try {
    if (statSync(file).isDirectory()) file = join(file, 'index.html');
    const size = statSync(file).size;
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'content-length': size });
    if (req.method === 'HEAD') return void res.end();
    createReadStream(file).pipe(res);
  } catch {
    res.writeHead(404).end('not found');
  }
});
server.listen(Number(portArg), '127.0.0.1', () => console.log(`serving ${root} at http://127.0.0.1:${portArg}${base}`));
