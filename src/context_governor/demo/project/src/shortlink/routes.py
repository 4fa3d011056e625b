"""HTTP endpoints: the JSON API under /api and the redirects at /<slug>."""

from __future__ import annotations

import logging
import secrets

from flask import Blueprint, Response, abort, current_app, jsonify, redirect, request
from werkzeug.wrappers import Response as BaseResponse

from . import models
from .config import Config
from .ratelimit import RateLimiter
from .timeutil import ExpiryError, format_ts, parse_expiry
from .validators import UrlError, normalize_url

log = logging.getLogger(__name__)

api = Blueprint("api", __name__)
redirects = Blueprint("redirects", __name__)

OWNER_HEADER = "X-Owner-Token"
MAX_PAGE = 200

ApiResponse = tuple[Response, int] | Response


def _config() -> Config:
    config: Config = current_app.extensions["shortlink.config"]
    return config


def _limiter() -> RateLimiter:
    limiter: RateLimiter = current_app.extensions["shortlink.limiter"]
    return limiter


def _client_key() -> str:
    forwarded = request.headers.get("X-Forwarded-For", "")
    return forwarded.split(",")[0].strip() or request.remote_addr or "unknown"


def _error(code: str, message: str, status: int) -> tuple[Response, int]:
    return jsonify(error=code, message=message), status


def _owner_or_401() -> str:
    token = request.headers.get(OWNER_HEADER, "").strip()
    if not token:
        resp, status = _error("unauthorized", f"Send your {OWNER_HEADER} header.", 401)
        resp.status_code = status
        abort(resp)
    return token


@api.before_request
def _rate_limit() -> tuple[Response, int] | None:
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return None
    key = _client_key()
    if _limiter().allow(key):
        return None
    retry = _limiter().retry_after(key)
    resp, status = _error("rate_limited", "Too many requests, slow down.", 429)
    resp.headers["Retry-After"] = str(max(1, round(retry)))
    log.warning("rate limited client=%s retry_after=%.1fs", key, retry)
    return resp, status


@api.post("/links")
def create_link() -> ApiResponse:
    payload = request.get_json(silent=True)
    if not isinstance(payload, dict):
        return _error("bad_request", "Expected a JSON object.", 400)
    config = _config()
    try:
        url = normalize_url(
            payload.get("url"),
            max_length=config.max_url_length,
            blocked_hosts=config.blocked_hosts,
        )
    except UrlError as exc:
        return _error("invalid_url", str(exc), 422)

    expires_at_raw = payload.get("expires_at")
    expires_in = payload.get("expires_in")
    if expires_at_raw is None and expires_in is None and config.default_ttl_seconds:
        expires_in = config.default_ttl_seconds
    try:
        expires_at = parse_expiry(expires_at_raw, expires_in, max_ttl=config.max_ttl_seconds)
    except ExpiryError as exc:
        return _error("invalid_expiry", str(exc), 422)

    slug = payload.get("slug")
    if slug is not None and not models.is_valid_custom_slug(slug):
        return _error(
            "invalid_slug",
            "Custom slugs are 3-64 characters of letters, digits, '-' and '_'.",
            422,
        )
    owner_token = request.headers.get(OWNER_HEADER, "").strip() or secrets.token_urlsafe(24)
    try:
        link = models.create_link(
            url,
            slug=slug,
            expires_at=expires_at,
            owner_token=owner_token,
            slug_length=config.slug_length,
        )
    except models.SlugTaken:
        return _error("slug_taken", f"The slug {slug!r} is already in use.", 409)

    log.info(
        "created slug=%s url=%s expires_at=%s", link.slug, link.url, format_ts(link.expires_at)
    )
    body = link.to_dict(config.base_url)
    body["owner_token"] = owner_token
    resp = jsonify(body)
    resp.headers["Location"] = f"{config.base_url}/api/links/{link.slug}"
    return resp, 201


@api.get("/links")
def list_links() -> ApiResponse:
    owner = _owner_or_401()
    try:
        limit = min(MAX_PAGE, max(1, int(request.args.get("limit", 50))))
        offset = max(0, int(request.args.get("offset", 0)))
    except ValueError:
        return _error("bad_request", "limit and offset must be integers.", 400)
    base = _config().base_url
    links = models.list_links(owner, limit=limit, offset=offset)
    return jsonify(
        links=[link.to_dict(base) for link in links],
        limit=limit,
        offset=offset,
        next_offset=offset + limit if len(links) == limit else None,
    )


@api.get("/links/<slug>")
def get_link(slug: str) -> ApiResponse:
    link = models.get_link(slug)
    if link is None:
        abort(404)
    body = link.to_dict(_config().base_url)
    body["expired"] = link.expired
    return jsonify(body)


@api.get("/links/<slug>/stats")
def link_stats(slug: str) -> ApiResponse:
    owner = _owner_or_401()
    link = models.get_link(slug)
    if link is None or link.owner_token != owner:
        abort(404)
    return jsonify(
        slug=link.slug,
        clicks=link.clicks,
        last_click_at=format_ts(link.last_click_at),
        daily=models.click_histogram(link.id),
    )


@api.delete("/links/<slug>")
def delete_link(slug: str) -> ApiResponse:
    owner = _owner_or_401()
    if not models.delete_link(slug, owner):
        abort(404)
    log.info("deleted slug=%s", slug)
    return Response(status=204)


@redirects.route("/<slug>", methods=["GET", "HEAD"])
def follow(slug: str) -> tuple[Response, int] | BaseResponse:
    link = models.get_link(slug)
    if link is None:
        abort(404)
    if link.expired:
        log.info("redirect slug=%s expired at %s", slug, format_ts(link.expires_at))
        return _error("expired", "This link has expired.", 410)
    models.record_click(
        link.id,
        referrer=request.referrer,
        user_agent=request.user_agent.string,
    )
    return redirect(link.url, code=302)
