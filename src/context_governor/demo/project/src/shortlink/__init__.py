"""shortlink: a tiny self-hosted URL shortener."""

from __future__ import annotations

import logging
import os
from typing import Any

from flask import Flask, jsonify

from . import db
from .cli import register_commands
from .config import load_config
from .ratelimit import RateLimiter

__version__ = "0.4.2"

log = logging.getLogger(__name__)


def create_app(overrides: dict[str, Any] | None = None) -> Flask:
    """Application factory.

    ``overrides`` is merged over the configuration read from the environment;
    the test-suite uses it to point the app at a temporary database.
    """
    app = Flask(__name__, instance_relative_config=True)
    config = load_config(os.environ)
    if overrides:
        config = config.replace(**overrides)
    app.config.from_mapping(config.as_flask_config())
    app.extensions["shortlink.config"] = config

    os.makedirs(app.instance_path, exist_ok=True)
    db.init_app(app)

    app.extensions["shortlink.limiter"] = RateLimiter(
        capacity=config.rate_limit_burst,
        refill_per_second=config.rate_limit_per_minute / 60.0,
    )

    from .routes import api, redirects

    app.register_blueprint(api, url_prefix="/api")
    app.register_blueprint(redirects)
    register_commands(app)

    @app.errorhandler(404)
    def not_found(err: Exception) -> tuple[Any, int]:
        return jsonify(error="not_found", message="No such link."), 404

    @app.errorhandler(405)
    def method_not_allowed(err: Exception) -> tuple[Any, int]:
        return jsonify(error="method_not_allowed", message=str(err)), 405

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    log.info("shortlink %s ready (db=%s)", __version__, config.database)
    return app
