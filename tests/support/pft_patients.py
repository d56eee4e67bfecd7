"""The patient endpoints of NoETL's test server, which its PFT fixtures' cursor loops feed.

Written from NoETL's own test server, ``fixtures/servers/paginated_api.py`` of ``noetl/e2e``
at commit ``1e41859`` (the commit tests/corpus/noetl-e2e was copied from; Apache-2.0, its
LICENSE beside that copy): the same deterministic page counts and records (md5 of the
patient id and data type), the same one-record pages and the same 50-requests-a-second limit.
``tests/support/paginated_api.py`` serves them; these functions build the answers.

=================================================  =========================================================
``GET /api/v1/patient/<type>?patientId&page``      ``assessments`` 2-4 pages, ``conditions`` 1-3,
                                                   ``medications`` 2-3, ``vital_signs`` 1: ``{data: [one
                                                   record], paging: {hasMore, page, pageSize: 1, total:
                                                   <pages>}}``; a page past the last: 404
``GET /api/v1/patient/demographics?patientId``     one record ``{patientId, firstName, lastName, dob,
                                                   gender, status}``
``GET /api/v1/pft/mds/details?assessmentId``       ``{rowCount: 1, rows: [{assessment_id, payload}]}``; an
                                                   empty id or one with a comma: 400
``GET /api/v1/mds/assessment/<id>``                that ``payload`` alone: ``{assessmentId, status, sections}``
=================================================  =========================================================

Past 50 requests to these in one second a request gets 429 with ``Retry-After: 1``.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

__all__ = ["PAGE_BOUNDS", "RATE_LIMIT", "RateLimit", "page_count", "patient_page", "demographics", "mds_assessment", "mds_details"]

#: data type -> (fewest, most) pages a patient has
PAGE_BOUNDS = {"assessments": (2, 4), "conditions": (1, 3), "medications": (2, 3), "vital_signs": (1, 1)}
RATE_LIMIT = 50  # requests a second, across the patient endpoints (NoETL's PFT_RATE_LIMIT)


def _seed(text: str) -> int:
    return int(hashlib.md5(text.encode()).hexdigest(), 16)  # noqa: S324 - NoETL's seed, not security


def page_count(patient_id: str, data_type: str) -> int:
    """The pages ``patient_id`` has of ``data_type``: fixed per pair, so reruns agree."""
    low, high = PAGE_BOUNDS[data_type]
    return low + _seed(f"{patient_id}:{data_type}") % (high - low + 1)


def _record(patient_id: str, data_type: str, page: int) -> dict[str, Any]:
    seed = _seed(f"{patient_id}:{data_type}:{page}")
    record: dict[str, Any] = {"id": f"{data_type[:4].upper()}-{patient_id}-p{page}-i0", "patientId": patient_id,
                              "dataType": data_type, "value": seed % 100}
    if data_type == "assessments":
        count = 5 + seed % 6
        record["mdsAssessmentIds"] = [f"MDS-{patient_id}-p{page}-0-{i:02d}" for i in range(1, count + 1)]
        record["mdsCount"] = count
    return record


def patient_page(data_type: str, patient_id: str, page: int) -> dict[str, Any] | None:
    """One one-record page, or None past the last page (the server answers 404)."""
    total = page_count(patient_id, data_type)
    if page > total:
        return None
    return {"data": [_record(patient_id, data_type, page)],
            "paging": {"hasMore": page < total, "page": page, "pageSize": 1, "total": total}}


def demographics(patient_id: str) -> dict[str, Any]:
    seed = _seed(f"{patient_id}:demographics")
    return {"patientId": patient_id, "firstName": f"First{seed % 1000}", "lastName": f"Last{(seed >> 8) % 1000}",
            "dob": f"19{50 + seed % 50}-{1 + seed % 12:02d}-{1 + (seed >> 4) % 28:02d}",
            "gender": "M" if seed % 2 == 0 else "F", "status": "active"}


def mds_assessment(assessment_id: str) -> dict[str, Any]:
    seed = _seed(assessment_id)
    return {"assessmentId": assessment_id, "status": "completed",
              "sections": [{"sectionId": f"S{i}",
                            "questions": [{"key": f"B{i}0{j}", "responses": [{"responseValue": str((seed + i * 10 + j) % 5)}]}
                                          for j in range(1, 4)]}
                           for i in range(1, 4)]}


def mds_details(assessment_id: str) -> dict[str, Any]:
    return {"rowCount": 1, "rows": [{"assessment_id": assessment_id, "payload": mds_assessment(assessment_id)}]}


class RateLimit:
    """At most ``limit`` requests in any one second (a sliding window); ``clock`` for tests."""

    def __init__(self, limit: int = RATE_LIMIT, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self._clock = clock
        self._times: deque[float] = deque()
        self._lock = threading.Lock()

    def admit(self) -> bool:
        now = self._clock()
        with self._lock:
            while self._times and now - self._times[0] >= 1.0:
                self._times.popleft()
            if len(self._times) >= self.limit:
                return False
            self._times.append(now)
            return True
