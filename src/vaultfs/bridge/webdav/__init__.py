"""The WebDAV front: the mount's tree served over WebDAV (WsgiDAV), on the same core."""
