"""Client side: local training and the upload format (what a client sends to the server)."""
from .upload import UPLOAD_KINDS, ClientUpload, read_uploads, write_upload  # noqa: F401
