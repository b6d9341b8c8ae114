// Retained sizes of a V8 .heapsnapshot as Chrome DevTools computes them, by
// DevTools' own snapshot worker (npm package chrome-devtools-frontend, pinned
// in scripts/setup.sh), so that v8dbg's dominator tree can be checked against
// a real client of the format.
//
// usage: node devtools_retained.mjs FRONTEND_DIR TYPESCRIPT_DIR BUILD_DIR SNAPSHOT OUT
//
// The worker's TypeScript sources (HeapSnapshot.ts and the few modules it
// needs) are transpiled once into BUILD_DIR with the pinned TypeScript; its UI
// string module is replaced by a stub (the worker only formats progress text
// with it). OUT gets one JSON document: for every node in snapshot order its
// id, its self size after DevTools' own adjustment (hidden and array nodes'
// sizes moved to their one owner), its retained size and its dominator's id.

import fs from 'node:fs';
import path from 'node:path';
import {createRequire} from 'node:module';
import {pathToFileURL} from 'node:url';

const [frontend, tsDir, buildDir, snapshotPath, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error('usage: node devtools_retained.mjs FRONTEND_DIR TYPESCRIPT_DIR BUILD_DIR SNAPSHOT OUT');
  process.exit(2);
}

const FILES = [
  'entrypoints/heap_snapshot_worker/HeapSnapshot.ts',
  'entrypoints/heap_snapshot_worker/AllocationProfile.ts',
  'entrypoints/heap_snapshot_worker/ContextAnalyzer.ts',
  'models/heap_snapshot/HeapSnapshotModel.ts',
];
const STUBS = {
  'core/i18n/i18n.js': 'export const i18n = {serializeUIString: (s, v) => JSON.stringify({string: s, values: v})};\n',
  'models/heap_snapshot/heap_snapshot.js':
      "import * as HeapSnapshotModel from './HeapSnapshotModel.js';\nexport {HeapSnapshotModel};\n",
};

function build() {
  const stamp = path.join(buildDir, '.built');
  if (fs.existsSync(stamp)) {
    return;
  }
  const ts = createRequire(import.meta.url)(path.resolve(tsDir, 'lib', 'typescript.js'));
  const src = path.join(frontend, 'front_end');
  const platform = fs.readdirSync(path.join(src, 'core/platform'), {recursive: true})
                       .filter(f => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.endsWith('.d.ts'))
                       .map(f => 'core/platform/' + f);
  for (const rel of [...FILES, ...platform]) {
    const text = fs.readFileSync(path.join(src, rel), 'utf8');
    const out = ts.transpileModule(text, {
      compilerOptions: {module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, useDefineForClassFields: true},
      fileName: rel,
    });
    const dest = path.join(buildDir, rel.replace(/\.ts$/, '.js'));
    fs.mkdirSync(path.dirname(dest), {recursive: true});
    fs.writeFileSync(dest, out.outputText);
  }
  for (const [rel, text] of Object.entries(STUBS)) {
    const dest = path.join(buildDir, rel);
    fs.mkdirSync(path.dirname(dest), {recursive: true});
    fs.writeFileSync(dest, text);
  }
  fs.writeFileSync(stamp, '');
}

build();
const HS = await import(pathToFileURL(path.join(buildDir, 'entrypoints/heap_snapshot_worker/HeapSnapshot.js')).href);
const Platform = await import(pathToFileURL(path.join(buildDir, 'core/platform/platform.js')).href);

function uint32(values) {
  const a = Platform.TypedArrayUtilities.createFixedBigUint32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    a.setValue(i, values[i]);
  }
  return a;
}

const raw = JSON.parse(fs.readFileSync(snapshotPath, 'utf8'));
const profile = {
  snapshot: raw.snapshot,
  nodes: uint32(raw.nodes),
  edges: uint32(raw.edges),
  strings: raw.strings,
  samples: raw.samples || [],
  locations: raw.locations || [],
  trace_function_infos: new Uint32Array(0),
  trace_tree: [],
  root_index: 0,
};
delete raw.nodes;
delete raw.edges;

const channel = new MessageChannel();
new HS.SecondaryInitManager(channel.port2);
const snap = new HS.JSHeapSnapshot(profile, new HS.HeapSnapshotProgress());
await snap.initialize(channel.port1);
const ids = [], self = [], retained = [], dominator = [];
const node = snap.createNode(0);
for (let i = 0; i < snap.nodeCount; i++) {
  node.nodeIndex = i * snap.nodeFieldCount;
  ids.push(node.id());
  self.push(node.selfSize());
  retained.push(node.retainedSize());
  const d = snap.dominatorsTree[i];
  node.nodeIndex = d * snap.nodeFieldCount;
  dominator.push(node.id());
}
fs.writeFileSync(outPath, JSON.stringify({ids, self, retained, dominator}));
channel.port1.close();
channel.port2.close();
