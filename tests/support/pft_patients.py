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
``GET /api/v1/pft/batch/<type>?patientIds=1,2``    ``{dataType, patientCount, rowCount, rows}`` for 1 to 500
``&pageSize&patientsPerFacility``                  patients (else 400): for a page type every page of each as
                                                   ``{patient_id, facility_mapping_id, page_number, payload:
                                                   {data, paging}, is_last_page}`` (``pageSize`` records a page),
                                                   ``demographics`` and ``mds`` (the last assessment's) one row
                                                   each; another type: 400
=================================================  =========================================================

Past 50 requests to the single-record endpoints in one second a request gets 429 with
``Retry-After: 1``; the batch endpoint has no limit (as NoETL's). NoETL's server marks its batch
handler "benchmark-only" (it was 410 Gone from noetl/e2e 44f291c until 39dc880 restored it), yet
serves it at the commit copied, with the batch fixture ``pft_flow_test/test_pft_flow.yaml``.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

__all__ = ["PAGE_BOUNDS", "RATE_LIMIT", "BATCH_MAX", "RateLimit", "page_count", "patient_page", "demographics",
           "mds_assessment", "mds_details", "batch_patient_ids", "batch"]

#: data type -> (fewest, most) pages a patient has
PAGE_BOUNDS = {"assessments": (2, 4), "conditions": (1, 3), "medications": (2, 3), "vital_signs": (1, 1)}
RATE_LIMIT = 50  # requests a second, across the patient endpoints (NoETL's PFT_RATE_LIMIT)
BATCH_MAX = 500  # patients in one batch request


def _seed(text: str) -> int:
    return int(hashlib.md5(text.encode()).hexdigest(), 16)  # noqa: S324 - NoETL's seed, not security


def page_count(patient_id: str, data_type: str) -> int:
    """The pages ``patient_id`` has of ``data_type``: fixed per pair, so reruns agree."""
    low, high = PAGE_BOUNDS[data_type]
    return low + _seed(f"{patient_id}:{data_type}") % (high - low + 1)


def _records(patient_id: str, data_type: str, page: int, page_size: int) -> list[dict[str, Any]]:
    seed = _seed(f"{patient_id}:{data_type}:{page}")
    records: list[dict[str, Any]] = [{"id": f"{data_type[:4].upper()}-{patient_id}-p{page}-i{i}", "patientId": patient_id,
                                      "dataType": data_type, "value": (seed + i) % 100} for i in range(page_size)]
    if data_type == "assessments":
        for index, record in enumerate(records):
            count = 5 + (seed + index) % 6
            record["mdsAssessmentIds"] = [f"MDS-{patient_id}-p{page}-{index}-{i:02d}" for i in range(1, count + 1)]
            record["mdsCount"] = count
    return records


def patient_page(data_type: str, patient_id: str, page: int) -> dict[str, Any] | None:
    """One one-record page, or None past the last page (the server answers 404)."""
    total = page_count(patient_id, data_type)
    if page > total:
        return None
    return {"data": _records(patient_id, data_type, page, 1),
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


def batch_patient_ids(csv: str) -> list[int]:
    """The patient ids of a batch request (``patientIds=1,2,3``): 1 to 500 integers, else ValueError."""
    ids = [int(part) for part in (raw.strip() for raw in csv.split(",")) if part]
    if not ids:
        raise ValueError("patientIds must contain at least one patient id")
    if len(ids) > BATCH_MAX:
        raise ValueError(f"patientIds batch size must be <= {BATCH_MAX}")
    return ids


def _facility(patient_id: int, per_facility: int) -> int:
    return (patient_id - 1) // max(1, per_facility) + 1


def batch(data_type: str, patient_ids: list[int], page_size: int, per_facility: int) -> dict[str, Any]:
    """NoETL's ``/api/v1/pft/batch/<type>``: every page of each patient as a row (with its facility,
    ``patient_id - 1`` over ``per_facility``), their demographics, or their last assessment's MDS detail;
    ValueError for another type."""
    rows: list[dict[str, Any]] = []
    for patient in patient_ids:
        text, facility = str(patient), _facility(patient, per_facility)
        if data_type in PAGE_BOUNDS:
            total = page_count(text, data_type)
            rows += [{"patient_id": patient, "facility_mapping_id": facility, "page_number": page,
                      "payload": {"data": _records(text, data_type, page, page_size),
                                  "paging": {"hasMore": page < total, "page": page, "pageSize": page_size,
                                             "total": total * page_size}},
                      "is_last_page": page == total} for page in range(1, total + 1)]
        elif data_type == "demographics":
            rows.append({"patient_id": patient, "facility_mapping_id": facility, "payload": demographics(text)})
        elif data_type == "mds":
            assessment = f"MDS-{patient}-{page_count(text, 'assessments')}"
            rows.append({"patient_id": patient, "facility_mapping_id": facility, "assessment_id": assessment,
                         "payload": mds_assessment(assessment)})
        else:
            raise ValueError(f"unsupported PFT batch data_type: {data_type}")
    return {"dataType": data_type, "patientCount": len(patient_ids), "rowCount": len(rows), "rows": rows}


class RateLimit:
    """At most ``limit`` requests in any one second (a sliding window); ``clock`` for tests."""

    def __init__(self, limit: int = RATE_LIMIT, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self._clock = clock
        self._times: deque[float] = deque()
        self._lock = threading.Lock()

    def admit(self, limit: int | None = None) -> bool:
        """Count this request if fewer than ``limit`` (default: the window's) came in the last second."""
        now = self._clock()
        with self._lock:
            while self._times and now - self._times[0] >= 1.0:
                self._times.popleft()
            if len(self._times) >= (self.limit if limit is None else limit):
                return False
            self._times.append(now)
            return True
