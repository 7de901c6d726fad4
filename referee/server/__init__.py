"""The competition server (``referee serve``): authors upload bots over the web, each is
checked as ``referee submit`` checks it and joins the running league.

The parts, from the bottom: the server's own SQLite file (:mod:`referee.server.database`);
the authors, their tokens and the audit log (:mod:`referee.server.authors`); the uploads,
their queue and the web sessions (:mod:`referee.server.submissions`); uploads unpacked
under the staging rules and folders packed deterministically
(:mod:`referee.server.archives`); the read deadlines uvicorn lacks
(:mod:`referee.server.guard`); the check queue (:mod:`referee.server.checks`); what the
app shares (:mod:`referee.server.state`); the Starlette app (:mod:`referee.server.app`);
and the process that runs it all (:mod:`referee.server.serve`). Only the parts that need
no web framework are exported here: the others need the ``server`` extra (Starlette,
uvicorn) and are imported by their own names.
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
