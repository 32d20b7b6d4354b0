// Service worker of the vram page: caches the app shell and Trunk's hashed assets on install, so the
// page works offline after the first visit. Trunk's post_build hook (sw-hook.sh) prepends
// `self.VRAM_MANIFEST = { version, files }` to the staged copy of this file: the build's file list and
// a content hash. The hash changes the worker's bytes whenever the bundle changes, so the browser
// installs the new worker on the next visit and the old cache is deleted on activation.
// Every URL is relative to the worker's location, so the bundle works from any sub-path.
'use strict';

const MANIFEST = self.VRAM_MANIFEST || { version: 'unbuilt', files: [] };
const CACHE = 'vram-' + MANIFEST.version;
const SHELL = ['./'].concat(MANIFEST.files.map((f) => './' + f));

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(SHELL))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((keys) =>
        Promise.all(
          keys.filter((k) => k.startsWith('vram-') && k !== CACHE).map((k) => caches.delete(k)),
        ),
      )
      .then(() => self.clients.claim()),
  );
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET' || new URL(request.url).origin !== self.location.origin) {
    return;
  }
  if (request.mode === 'navigate') {
    // The page itself: the network first (a new deployment shows at once), the cached shell offline.
    // The query string carries the share-link state, so it is ignored when matching the cache.
    event.respondWith(
      fetch(request).catch(() =>
        caches
          .open(CACHE)
          .then((cache) => cache.match(request, { ignoreSearch: true }).then((r) => r || cache.match('./'))),
      ),
    );
    return;
  }
  // Hashed assets never change under the same name: the cache first.
  event.respondWith(
    caches.open(CACHE).then((cache) =>
      cache.match(request).then((hit) => hit || fetch(request)),
    ),
  );
});
