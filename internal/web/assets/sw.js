// The dashboard's service worker (docs/design/web.md): it keeps the shell
// (/assets/: styles, script, the terminal's code) for when the network is
// slow or gone, and nothing else. Pages, /events, /waiting, action links
// and every other answer carry the fleet's state and go to the network
// only, never into a cache.
'use strict';
var SHELL = 'harness-shell-v1';
var FILES = ['/assets/app.css', '/assets/app.js', '/icon-192.png', '/icon-512.png'];

self.addEventListener('install', function (e) {
  e.waitUntil(caches.open(SHELL).then(function (c) { return c.addAll(FILES); }).then(function () { return self.skipWaiting(); }));
});

self.addEventListener('activate', function (e) {
  e.waitUntil(caches.keys().then(function (keys) {
    return Promise.all(keys.filter(function (k) { return k !== SHELL; }).map(function (k) { return caches.delete(k); }));
  }).then(function () { return self.clients.claim(); }));
});

function isShell(url) {
  return url.origin === self.location.origin &&
    (url.pathname.indexOf('/assets/') === 0 || url.pathname === '/icon-192.png' || url.pathname === '/icon-512.png');
}

self.addEventListener('fetch', function (e) {
  var url = new URL(e.request.url);
  if (e.request.method !== 'GET' || !isShell(url)) return; // the network's, untouched
  // The network first, so a new daemon's shell is used at once; the
  // cache when the network fails.
  e.respondWith(fetch(e.request).then(function (r) {
    if (r.ok) {
      var copy = r.clone();
      caches.open(SHELL).then(function (c) { c.put(e.request, copy); });
    }
    return r;
  }).catch(function () {
    return caches.match(e.request).then(function (hit) { return hit || Response.error(); });
  }));
});
