"""The competition server (``referee serve``, issue 34), built a part at a time.

What exists: the authors and their tokens, and the audit log of what was done to them
(:mod:`referee.server.authors`), kept in the server's own SQLite file beside the league's
store (:mod:`referee.server.database`); and the bot uploads, unpacked safely into a folder
the referee reads, and bot folders packed for upload (:mod:`referee.server.archives`).
The web app and the check queue come next and sit on these.
"""

from referee.server.archives import ArchiveLimits, pack_bot, unpack_upload, upload_filename
from referee.server.authors import Author, AuthorBook, NewToken
from referee.server.database import DATABASE, ServerDatabase

__all__ = [
    "DATABASE",
    "ArchiveLimits",
    "Author",
    "AuthorBook",
    "NewToken",
    "ServerDatabase",
    "pack_bot",
    "unpack_upload",
    "upload_filename",
]
