"""Auditing: ``referee verify`` checks a results folder or a published site.

:mod:`referee.verify.audit` replays every log and checks the deals, the schedule, the
results chain and the leaderboard against the evidence; :mod:`referee.verify.pages`
renders every page of a site again (with the publishing code,
:func:`referee.publish.site.render_site`) and compares it byte for byte; and
:mod:`referee.verify.sites` runs the two, in that order. It sits above
publishing: it reads what publishing writes, and publishing knows nothing of it.
"""

from referee.verify.audit import Verification, is_site, verify_results
from referee.verify.sites import verify_folder, verify_site

__all__ = ["Verification", "is_site", "verify_folder", "verify_results", "verify_site"]
