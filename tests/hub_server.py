"""A loopback server that speaks the part of the Hugging Face Hub's HTTP API
`huggingface_hub` uses to download a model, serving repositories from local
folders: what `hf://` names are tested against (no network here).

    with HubServer({"sentence-transformers/all-MiniLM-L6-v2": folder}) as hub:
        env = {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf")}

Routes (huggingface_hub 2.x's `snapshot_download` / `hf_hub_download`):

    GET  /api/models/OWNER/NAME/revision/REV        {"id", "sha", "siblings"}
    GET  /api/models/OWNER/NAME/tree/SHA?recursive=  [{"type", "path", "size", "oid"}]
    HEAD /OWNER/NAME/resolve/SHA/FILE               X-Repo-Commit, ETag, Content-Length
    GET  /OWNER/NAME/resolve/SHA/FILE               the bytes (a Range request honoured)

A repository's `access` makes it answer as a gated (401, X-Error-Code
GatedRepo) or private repo (401 with no token); an unknown name answers 404
(X-Error-Code RepoNotFound), an unknown revision 404 (RevisionNotFound).
`requests` counts the requests served, so a test can tell that an offline
run asked nothing.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import pathlib
import threading
import urllib.parse


def _git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    def __init__(self, folder, sha=None, access="public", token=None):
        self.folder = pathlib.Path(folder)
        self.files = sorted(
            p.relative_to(self.folder).as_posix()
            for p in self.folder.rglob("*")
            if p.is_file()
        )
        digest = hashlib.sha1()
        for name in self.files:
            digest.update(name.encode() + (self.folder / name).read_bytes())
        self.sha = sha or digest.hexdigest()
        self.access = access  # "public", "gated" or "private"
        self.token = token


class HubServer:
    def __init__(self, repos):
        self.repos = {
            name: repo if isinstance(repo, Repo) else Repo(repo)
            for name, repo in repos.items()
        }
        self.requests = []
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

    def _handler(hub):  # noqa: N805 - the handler class closes over the server
        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):  # noqa: N802 - http.server's name
                self._serve(body=False)

            def do_GET(self):  # noqa: N802
                self._serve(body=True)

            def _send(self, status, data=b"", headers=None, body=True):
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if body:
                    self.wfile.write(data)

            def _json(self, status, value, headers=None, body=True):
                headers = {"Content-Type": "application/json", **(headers or {})}
                self._send(status, json.dumps(value).encode(), headers, body)

            def _error(self, status, code, message, body=True):
                self._json(
                    status,
                    {"error": message},
                    {"X-Error-Code": code, "X-Error-Message": message},
                    body,
                )

            def _repo(self, name, body):
                repo = hub.repos.get(name)
                if repo is None:
                    self._error(404, "RepoNotFound", f"Repository {name} not found", body)
                    return None
                token = (
                    self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
                )
                if repo.access != "public" and (not token or token != repo.token):
                    if repo.access == "gated":
                        self._error(
                            401, "GatedRepo", f"Access to model {name} is restricted.", body
                        )
                    else:
                        self._error(
                            401, "RepoNotFound", f"Repository {name} not found", body
                        )
                    return None
                return repo

            def _serve(self, body):
                hub.requests.append((self.command, self.path))
                url = urllib.parse.urlparse(self.path)
                parts = [urllib.parse.unquote(p) for p in url.path.strip("/").split("/")]
                if parts[:2] == ["api", "models"] and len(parts) >= 6:
                    name, kind, rest = "/".join(parts[2:4]), parts[4], parts[5:]
                    repo = self._repo(name, body)
                    if repo is None:
                        return
                    revision = rest[0]
                    if revision not in ("main", repo.sha):
                        self._error(
                            404, "RevisionNotFound", f"Invalid rev id: {revision}", body
                        )
                        return
                    if kind == "revision":
                        self._json(
                            200,
                            {
                                "id": name,
                                "modelId": name,
                                "sha": repo.sha,
                                "private": repo.access == "private",
                                "gated": repo.access == "gated" and "auto",
                                "siblings": [{"rfilename": f} for f in repo.files],
                            },
                            body=body,
                        )
                        return
                    if kind == "tree":
                        entries, dirs = [], set()
                        for f in repo.files:
                            data = (repo.folder / f).read_bytes()
                            entries.append(
                                {
                                    "type": "file",
                                    "path": f,
                                    "size": len(data),
                                    "oid": _git_blob_sha(data),
                                }
                            )
                            for i in range(1, f.count("/") + 1):
                                dirs.add("/".join(f.split("/")[:i]))
                        entries += [
                            {"type": "directory", "path": d, "oid": "0" * 40} for d in dirs
                        ]
                        self._json(200, entries, body=body)
                        return
                if len(parts) >= 5 and parts[2] == "resolve":
                    name, revision, file = (
                        "/".join(parts[:2]),
                        parts[3],
                        "/".join(parts[4:]),
                    )
                    repo = self._repo(name, body)
                    if repo is None:
                        return
                    if revision not in ("main", repo.sha):
                        self._error(
                            404, "RevisionNotFound", f"Invalid rev id: {revision}", body
                        )
                        return
                    if file not in repo.files:
                        self._error(404, "EntryNotFound", f"{file} does not exist", body)
                        return
                    data = (repo.folder / file).read_bytes()
                    headers = {
                        "X-Repo-Commit": repo.sha,
                        "ETag": f'"{_git_blob_sha(data)}"',
                        "Content-Type": "application/octet-stream",
                    }
                    ranged = self.headers.get("Range", "")
                    if ranged.startswith("bytes=") and body:
                        start = int(ranged[6:].split("-")[0] or 0)
                        headers["Content-Range"] = (
                            f"bytes {start}-{len(data) - 1}/{len(data)}"
                        )
                        self._send(206, data[start:], headers, body)
                        return
                    self._send(200, data, headers, body)
                    return
                self._error(404, "EntryNotFound", f"no route {url.path}", body)

        return Handler
