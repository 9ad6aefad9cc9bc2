// A local HTTP server that serves pages with sub-resources and records the Multipath-Policy header
// of every request it receives.
import http from 'node:http';

const pixel = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5f5e3f80000000049454e44ae426082',
  'hex',
);

export function pageHtml(id, thirdParty) {
  const tp = thirdParty ? `<script src="${thirdParty}/tp.js?p=${id}"></script>` : '';
  return `<!doctype html><html><head><meta charset="utf-8"><title>page ${id}</title>
<link rel="stylesheet" href="/style.css?p=${id}">
<script src="/app.js?p=${id}"></script>${tp}</head>
<body><h1>page ${id}</h1><img src="/pixel.png?p=${id}" alt="">
<script>fetch('/data.json?p=${id}').then(r => r.text()).then(t => { document.title = 'done ' + t; });</script>
</body></html>`;
}

export function startRecorder({ host = '127.0.0.1', thirdParty } = {}) {
  const requests = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, `http://${req.headers.host}`);
    requests.push({
      t: Date.now(),
      host: req.headers.host,
      path: url.pathname,
      page: url.pathname.startsWith('/page/') ? url.pathname.slice(6) : url.searchParams.get('p'),
      header: req.headers['multipath-policy'] ?? null,
    });
    const send = (type, body) => {
      res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    if (url.pathname.startsWith('/page/')) return send('text/html', pageHtml(url.pathname.slice(6), thirdParty?.()));
    if (url.pathname === '/style.css') return send('text/css', 'h1 { font-family: sans-serif; }');
    if (url.pathname === '/app.js' || url.pathname === '/tp.js') return send('text/javascript', 'void 0;');
    if (url.pathname === '/pixel.png') return send('image/png', pixel);
    if (url.pathname === '/data.json') return send('application/json', '"ok"');
    res.writeHead(404, { 'cache-control': 'no-store' });
    res.end();
  });
  return new Promise((resolve) => {
    server.listen(0, host, () => {
      const { port } = server.address();
      resolve({
        origin: `http://${host}:${port}`,
        requests,
        close: () => new Promise((r) => server.close(r)),
        // Requests made for one page id, as [path, header] pairs.
        forPage: (id) => requests.filter((r) => r.page === String(id)),
      });
    });
  });
}
