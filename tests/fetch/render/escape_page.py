"""A page that tries every way a browser has of reaching an address itself, for the
rendering scope tests: each vector aims at its own trap (tests/fetch/render/traps.py), so a
trap that is hit names the way out. When it has tried them all (WebRTC's ICE gathering done,
or 2 s), the page adds a link to ``/found/done-<the vectors that threw>`` (``none`` when none
did)."""

from __future__ import annotations

import json

from tests.fetch.render.traps import Traps

VECTORS: dict[str, tuple[str, str]] = {
    "popup": ("tcp", "127.0.0.1"),
    "popup2": ("tcp", "127.0.0.2"),
    "blank_link": ("tcp", "127.0.0.1"),
    "blank_form": ("tcp", "127.0.0.1"),
    "preconnect": ("tcp", "127.0.0.1"),
    "preconnect2": ("tcp", "127.0.0.2"),
    "preconnect_header": ("tcp", "127.0.0.1"),
    "preconnect_markup": ("tcp", "127.0.0.1"),
    "preconnect_markup2": ("tcp", "127.0.0.2"),
    "prefetch_markup": ("tcp", "127.0.0.1"),
    "prefetch": ("tcp", "127.0.0.1"),
    "preload": ("tcp", "127.0.0.1"),
    "websocket": ("tcp", "127.0.0.1"),
    "eventsource": ("tcp", "127.0.0.1"),
    "beacon": ("tcp", "127.0.0.1"),
    "fetch": ("tcp", "127.0.0.2"),
    "fetch_keepalive": ("tcp", "127.0.0.1"),
    "iframe": ("tcp", "127.0.0.1"),
    "worker": ("tcp", "127.0.0.1"),
    "webtransport": ("udp", "127.0.0.1"),
    "webtransport2": ("udp", "127.0.0.2"),
    "stun": ("udp", "127.0.0.2"),
    "turn_udp": ("udp", "127.0.0.1"),
    "turn_tcp": ("tcp", "127.0.0.1"),
    "stun_iframe": ("udp", "127.0.0.2"),
    "turn_udp_iframe": ("udp", "127.0.0.1"),
    "turn_tcp_iframe": ("tcp", "127.0.0.2"),
    "stun_popup": ("udp", "127.0.0.2"),
    "stun_data_iframe": ("udp", "127.0.0.2"),
    "turn_udp_popup": ("udp", "127.0.0.1"),
    "turn_tcp_popup": ("tcp", "127.0.0.1"),
    "meta_refresh": ("tcp", "127.0.0.1"),
    "ping": ("tcp", "127.0.0.1"),
    "css_import": ("tcp", "127.0.0.1"),
    "font": ("tcp", "127.0.0.1"),
    "object": ("tcp", "127.0.0.1"),
    "embed": ("tcp", "127.0.0.1"),
    "image": ("tcp", "127.0.0.1"),
    "poster": ("tcp", "127.0.0.1"),
    "speculation": ("tcp", "127.0.0.1"),
    "shared_worker": ("tcp", "127.0.0.1"),
    "frame_form": ("tcp", "127.0.0.1"),
    "frame_location": ("tcp", "127.0.0.1"),
    "csp_report": ("tcp", "127.0.0.1"),
}
"""Each vector's trap: its kind (``tcp``, ``udp``) and address."""

_SCRIPT = """
(async () => {
  const T = %s;
  const tries = [], threw = [];
  const attempt = (name, f) => {
    try { const r = f(); if (r && r.then) tries.push(r.catch(() => 0)); }
    catch (e) { threw.push(name); }
  };
  const at = (name, path) => 'http://' + T[name] + (path || '/');
  attempt('popup', () => window.open(at('popup')));
  attempt('popup2', () => window.open(at('popup2'), 'other'));
  attempt('blank_link', () => {
    const a = document.createElement('a');
    a.href = at('blank_link'); a.target = '_blank'; document.body.appendChild(a); a.click();
  });
  attempt('blank_form', () => {
    const f = document.createElement('form');
    f.method = 'POST'; f.action = at('blank_form'); f.target = '_blank';
    const i = document.createElement('input'); i.name = 'secret'; i.value = 'body';
    f.appendChild(i); document.body.appendChild(f); f.submit();
  });
  for (const [rel, name] of [['preconnect', 'preconnect'], ['preconnect', 'preconnect2'],
      ['prefetch', 'prefetch'], ['preload', 'preload']]) {
    attempt(name, () => {
      const l = document.createElement('link');
      l.rel = rel; l.href = at(name); if (rel === 'preload') l.as = 'fetch';
      document.head.appendChild(l);
    });
  }
  attempt('websocket', () => new WebSocket('ws://' + T.websocket + '/'));
  attempt('eventsource', () => new EventSource(at('eventsource')));
  attempt('beacon', () => navigator.sendBeacon(at('beacon'), 'body'));
  attempt('fetch', () => fetch(at('fetch'), {mode: 'no-cors'}));
  attempt('fetch_keepalive', () => fetch(at('fetch_keepalive'),
    {method: 'POST', body: 'body', keepalive: true, mode: 'no-cors'}));
  attempt('iframe', () => {
    const f = document.createElement('iframe'); f.src = at('iframe'); document.body.appendChild(f);
  });
  attempt('worker', () => new Worker(URL.createObjectURL(new Blob(
    ["fetch('" + at('worker') + "', {mode: 'no-cors'}).catch(() => 0)"],
    {type: 'text/javascript'}))));
  attempt('webtransport', () => new WebTransport('https://' + T.webtransport + '/').ready);
  attempt('webtransport2', () => new WebTransport('https://' + T.webtransport2 + '/').ready);
  const rtc = (w, stun, udp, tcp) => {
    const P = w.RTCPeerConnection || w.webkitRTCPeerConnection;
    const pc = new P({iceServers: [{urls: 'stun:' + T[stun]},
      {urls: 'turn:' + T[udp] + '?transport=udp', username: 'u', credential: 'c'},
      {urls: 'turn:' + T[tcp] + '?transport=tcp', username: 'u', credential: 'c'}]});
    pc.createDataChannel('d');
    return pc.createOffer().then(o => pc.setLocalDescription(o)).then(() => new Promise(r => {
      pc.onicegatheringstatechange = () => pc.iceGatheringState === 'complete' && r();
      setTimeout(r, 1500);
    }));
  };
  attempt('rtc', () => rtc(window, 'stun', 'turn_udp', 'turn_tcp'));
  attempt('rtc_iframe', () => {
    const f = document.createElement('iframe'); document.body.appendChild(f);
    return rtc(f.contentWindow, 'stun_iframe', 'turn_udp_iframe', 'turn_tcp_iframe');
  });
  attempt('rtc_data_iframe', () => {
    const f = document.createElement('iframe');
    f.src = 'data:text/html,' + encodeURIComponent('<script>const p = new RTCPeerConnection('
      + '{iceServers: [{urls: "stun:' + T.stun_data_iframe + '"}]}); p.createDataChannel("d");'
      + ' p.createOffer().then(o => p.setLocalDescription(o));</scr' + 'ipt>');
    document.body.appendChild(f);
  });
  attempt('rtc_popup', () => rtc(window.open(''), 'stun_popup', 'turn_udp_popup',
    'turn_tcp_popup'));
  const add = (html) => document.body.insertAdjacentHTML('beforeend', html);
  attempt('meta_refresh', () => {
    const f = document.createElement('iframe');
    f.srcdoc = '<meta http-equiv="refresh" content="0;url=' + at('meta_refresh') + '">';
    document.body.appendChild(f);
  });
  attempt('ping', () => {
    const a = document.createElement('a');
    a.href = '#pinged'; a.ping = at('ping'); document.body.appendChild(a); a.click();
  });
  attempt('css_import', () => add('<style>@import url("' + at('css_import') + '");</style>'));
  attempt('font', () => add('<style>@font-face {font-family: trap; src: url("' + at('font')
    + '");} body {font-family: trap;}</style><p>font</p>'));
  attempt('object', () => add('<object data="' + at('object') + '"></object>'));
  attempt('embed', () => add('<embed src="' + at('embed') + '">'));
  attempt('image', () => { new Image().src = at('image'); });
  attempt('poster', () => add('<video poster="' + at('poster') + '"></video>'));
  attempt('speculation', () => {
    const s = document.createElement('script'); s.type = 'speculationrules';
    s.textContent = JSON.stringify({prefetch: [{source: 'list', urls: [at('speculation')]}],
      prerender: [{source: 'list', urls: [at('speculation', '/p')]}]});
    document.head.appendChild(s);
  });
  attempt('shared_worker', () => new SharedWorker(URL.createObjectURL(new Blob(
    ["fetch('" + at('shared_worker') + "', {mode: 'no-cors'}).catch(() => 0)"],
    {type: 'text/javascript'}))));
  attempt('frame_form', () => {
    const f = document.createElement('iframe'); f.name = 'ff'; document.body.appendChild(f);
    const form = document.createElement('form');
    form.method = 'POST'; form.action = at('frame_form'); form.target = 'ff';
    document.body.appendChild(form); form.submit();
  });
  attempt('frame_location', () => {
    const f = document.createElement('iframe'); document.body.appendChild(f);
    f.contentWindow.location = at('frame_location');
  });
  attempt('csp_report', () => add('<img src="data:image/png;base64,AAAA">'));
  await Promise.race([Promise.all(tries), new Promise(r => setTimeout(r, 2000))]);
  const done = '/found/done-' + (threw.sort().join('-') || 'none');
  document.body.insertAdjacentHTML('beforeend', '<a id="done" href="' + done + '">done</a>');
})();
"""


async def open_vector_traps(traps: Traps) -> None:
    """A trap for each vector of :data:`VECTORS`."""
    for name, (kind, host) in VECTORS.items():
        await (traps.tcp(name, host) if kind == "tcp" else traps.udp(name, host))


def escape_page(traps: Traps) -> str:
    """The page, aimed at ``traps``: the vectors in markup (preconnect and prefetch links)
    and in its script."""
    addresses = {name: trap.address for name, trap in traps.traps.items()}
    links = "".join(
        f'<link rel="{rel}" href="http://{traps[name].address}/">'
        for rel, name in (
            ("preconnect", "preconnect_markup"),
            ("preconnect", "preconnect_markup2"),
            ("prefetch", "prefetch_markup"),
        )
    )
    script = _SCRIPT % json.dumps(addresses)
    return (
        f"<!doctype html><html><head><title>e</title>{links}</head>"
        f"<body><script>{script}</script></body></html>"
    )


def link_header(traps: Traps) -> dict[str, str]:
    """The page's answer's headers: a preconnect by ``Link``, a CSP report (the page
    loads an image the policy forbids)."""
    return {
        "Link": f"<http://{traps['preconnect_header'].address}>; rel=preconnect",
        "Content-Security-Policy-Report-Only": (
            f"img-src 'none'; report-uri http://{traps['csp_report'].address}/"
        ),
    }
