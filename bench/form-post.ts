/** A form POST on a keep-alive agent, answered with its status and body: the bench clients' one request. */
import http from 'node:http';

export function formPoster(agent: http.Agent, baseUrl: string, authorization: string) {
  return (pathname: string, body: string) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(`${baseUrl}${pathname}`, { method: 'POST', agent, headers: { authorization, 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.end(body);
    });
}
