-- shortlink schema, version 3.
-- Timestamps are TEXT, ISO-8601 in UTC with a Z suffix ("2024-03-01T12:00:00Z"),
-- so that they sort correctly as text and read well in the sqlite shell.

CREATE TABLE IF NOT EXISTS links (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    slug          TEXT    NOT NULL UNIQUE,
    url           TEXT    NOT NULL,
    created_at    TEXT    NOT NULL,
    expires_at    TEXT,
    clicks        INTEGER NOT NULL DEFAULT 0,
    last_click_at TEXT,
    owner_token   TEXT
);

CREATE INDEX IF NOT EXISTS idx_links_owner ON links (owner_token);
CREATE INDEX IF NOT EXISTS idx_links_expires ON links (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE IF NOT EXISTS clicks (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    link_id    INTEGER NOT NULL REFERENCES links (id) ON DELETE CASCADE,
    clicked_at TEXT    NOT NULL,
    referrer   TEXT,
    user_agent TEXT
);

CREATE INDEX IF NOT EXISTS idx_clicks_link ON clicks (link_id, clicked_at);
