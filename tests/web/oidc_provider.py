"""A small OpenID provider on 127.0.0.1 for the single sign-on tests: discovery, JWKS, the
authorization code flow with PKCE (S256), userinfo. Each test says what the id token and the
userinfo claim, and with which key the token is signed."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

CLIENT_ID = "memhub"
CLIENT_SECRET = "memhub-secret"
KID = "test-key"


def _key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class Provider:
    url: str = ""
    key: object = field(default_factory=_key)
    # What a test changes: the id token's claims over the right ones, the key that signs it,
    # the userinfo's claims.
    token_claims: dict = field(default_factory=dict)
    signing_key: object | None = None
    userinfo: dict = field(
        default_factory=lambda: {
            "sub": "dana-1",
            "email": "dana@example.com",
            "email_verified": True,
            "preferred_username": "dana",
            "given_name": "Dana",
            "family_name": "Scully",
            "groups": [],
        }
    )
    codes: dict = field(default_factory=dict)
    pkce_checked: int = 0

    def jwks(self) -> dict:
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**public, "kid": KID, "alg": "RS256", "use": "sig"}]}

    def id_token(self, nonce: str) -> str:
        now = int(time.time())
        claims = {
            "iss": self.url,
            "sub": self.userinfo["sub"],
            "aud": CLIENT_ID,
            "iat": now,
            "exp": now + 300,
            "nonce": nonce,
            **self.token_claims,
        }
        key = self.signing_key or self.key
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": KID})


def _handler(provider: Provider):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def _json(self, body: dict, status: int = 200) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            url = urlparse(self.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            if url.path == "/.well-known/openid-configuration":
                self._json(
                    {
                        "issuer": provider.url,
                        "authorization_endpoint": f"{provider.url}/authorize",
                        "token_endpoint": f"{provider.url}/token",
                        "userinfo_endpoint": f"{provider.url}/userinfo",
                        "jwks_uri": f"{provider.url}/jwks",
                        "code_challenge_methods_supported": ["S256"],
                    }
                )
            elif url.path == "/jwks":
                self._json(provider.jwks())
            elif url.path == "/authorize":
                assert query["client_id"] == CLIENT_ID and query["response_type"] == "code"
                assert query["code_challenge_method"] == "S256"
                code = secrets.token_urlsafe(16)
                provider.codes[code] = query
                target = (
                    f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query['state']})}"
                )
                self.send_response(302)
                self.send_header("Location", target)
                self.end_headers()
            elif url.path == "/userinfo":
                if self.headers.get("Authorization") != "Bearer access-token":
                    self._json({"error": "invalid_token"}, 401)
                else:
                    self._json(provider.userinfo)
            else:
                self._json({"error": "not_found"}, 404)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            request = provider.codes.pop(form.get("code", ""), None)
            challenge = base64.urlsafe_b64encode(
                hashlib.sha256(form.get("code_verifier", "").encode()).digest()
            ).rstrip(b"=")
            if (
                request is None
                or form.get("client_secret") != CLIENT_SECRET
                or form.get("redirect_uri") != request["redirect_uri"]
                or challenge.decode() != request["code_challenge"]
            ):
                self._json({"error": "invalid_grant"}, 400)
                return
            provider.pkce_checked += 1
            self._json(
                {
                    "access_token": "access-token",
                    "token_type": "Bearer",
                    "id_token": provider.id_token(request["nonce"]),
                }
            )

    return Handler


def start_provider() -> tuple[Provider, ThreadingHTTPServer]:
    provider = Provider()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(provider))
    provider.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return provider, server
