"""The competition server (``referee serve``, issue 34), built a part at a time.

What exists: the authors and their tokens, and the audit log of what was done to them
(:mod:`referee.server.authors`), kept in the server's own SQLite file beside the league's
store (:mod:`referee.server.database`). The web app, uploads and the check queue come next
and sit on these. :mod:`referee.server.guard` bounds the time a client may take to send a
request (headers, body); it needs the ``server`` extra (uvicorn), so it is imported by its
own name and not from here.
"""

from referee.server.authors import Author, AuthorBook, NewToken
from referee.server.database import DATABASE, ServerDatabase

__all__ = ["DATABASE", "Author", "AuthorBook", "NewToken", "ServerDatabase"]
