"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51).

Both need the cluster's Describe or Alter permission when an authorizer is
set, as in Kafka; the work (ZooKeeper reads and writes, KIP-554's checks) is
``simplekafka.broker.security.scram_users``, on a worker thread. This module
reads the requests and builds the answers.
"""

from __future__ import annotations

from collections.abc import Iterable

from twisted.internet import defer

from simplekafka.broker.apis.collaborators import Authorizer, Reactor, ZooKeeperHandle
from simplekafka.broker.collaborators import in_worker_thread
from simplekafka.broker.dispatch import RequestContext, RequestDispatcher
from simplekafka.broker.security.scram_users import (
    Alteration,
    UserResult,
    alter_users,
    describe_users,
)
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.message_types import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResponseResults,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)


class UserScramCredentialApis:
    def __init__(self, reactor: Reactor, zookeeper: ZooKeeperHandle, authorizer: Authorizer):
        self.reactor = reactor
        self.zookeeper = zookeeper
        self.authorizer = authorizer

    def register(self, dispatcher: RequestDispatcher) -> None:
        dispatcher.register(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, self.describe)
        dispatcher.register(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, self.alter)

    # -- Describe -------------------------------------------------------------------------

    def describe(self, context: RequestContext, request: DescribeUserScramCredentialsRequest
                 ) -> DescribeUserScramCredentialsResponse | defer.Deferred:
        if not self.authorizer.authorize(context, AclOperation.DESCRIBE, ResourceType.CLUSTER,
                                         CLUSTER_NAME):
            return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "results": []}
        zk = self.zookeeper()
        if zk is None:
            return {"error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE, "results": []}
        users = request["users"]
        names = None if users is None else [u["name"] for u in users]
        return in_worker_thread(self.reactor, describe_users, zk, names).addCallback(
            _described)

    # -- Alter ----------------------------------------------------------------------------

    def alter(self, context: RequestContext, request: AlterUserScramCredentialsRequest
              ) -> AlterUserScramCredentialsResponse | defer.Deferred:
        users = [d["name"] for d in request["deletions"]] + \
            [u["name"] for u in request["upsertions"]]
        if not self.authorizer.authorize(context, AclOperation.ALTER, ResourceType.CLUSTER,
                                         CLUSTER_NAME):
            return {"results": [_result(UserResult(u, ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
                                for u in dict.fromkeys(users)]}
        zk = self.zookeeper()
        if zk is None:
            return {"results": [_result(UserResult(u, ErrorCode.COORDINATOR_NOT_AVAILABLE))
                                for u in dict.fromkeys(users)]}
        deletions = [Alteration(d["name"], d["mechanism"]) for d in request["deletions"]]
        upsertions = [Alteration(u["name"], u["mechanism"], u["iterations"], u["salt"],
                                 u["salted_password"]) for u in request["upsertions"]]
        return in_worker_thread(self.reactor, alter_users, zk, deletions, upsertions
                                ).addCallback(_altered)


def _described(results: Iterable[UserResult]) -> DescribeUserScramCredentialsResponse:
    return {"error_code": 0, "results": [
        {"user": r.user, "error_code": r.error_code, "error_message": r.error_message,
         "credential_infos": [{"mechanism": mechanism, "iterations": iterations}
                              for mechanism, iterations in r.credentials]}
        for r in results]}


def _altered(results: Iterable[UserResult]) -> AlterUserScramCredentialsResponse:
    return {"results": [_result(r) for r in results]}


def _result(result: UserResult) -> AlterUserScramCredentialsResponseResults:
    return {"user": result.user, "error_code": result.error_code,
            "error_message": result.error_message}
